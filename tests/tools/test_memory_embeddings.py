"""The embeddings client of ``memory`` search, against the local fake (which refuses what OpenAI
refuses) and against answers no real server should send (``httpx.MockTransport``)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from core.settings import MemorySettings
from fakes.embeddings import MAX_INPUTS, EmbeddingsServer, vector
from tools.memory_embeddings import BATCH, EmbeddingsError, embed

MODEL = "embed-test"


@pytest.fixture
def server() -> Iterator[EmbeddingsServer]:
    with EmbeddingsServer() as running:
        yield running


def _settings(url: str = "http://embeddings.test/v1") -> MemorySettings:
    return MemorySettings(embeddings_url=url, embeddings_model=MODEL)


@pytest.mark.parametrize("body, status, message", [
    ({"input": ["a"]}, 400, "you must provide a model parameter"),
    ({"model": MODEL}, 400, "you must provide a input parameter"),
    ({"model": MODEL, "input": ["a", ""]}, 400, "'$.input' is invalid"),
    ({"model": MODEL, "input": []}, 400, "'$.input' is invalid"),
    ({"model": MODEL, "input": ["a"] * (MAX_INPUTS + 1)}, 400, f"at most {MAX_INPUTS} inputs"),
    ({"model": "other", "input": ["a"]}, 404, "The model `other` does not exist"),
])  # fmt: skip
def test_the_fake_refuses_what_openai_refuses(server, body, status, message):
    response = httpx.post(f"{server.url}/embeddings", json=body)
    assert response.status_code == status and message in response.json()["error"]["message"]
    assert server.inputs == []


def test_the_fake_answers_in_the_documented_shape(server):
    response = httpx.post(f"{server.url}/embeddings", json={"model": MODEL, "input": "one text"})
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "list" and body["model"] == MODEL and body["usage"]["prompt_tokens"] == 2
    assert body["data"] == [{"object": "embedding", "index": 0, "embedding": vector("one text")}]
    assert httpx.post(f"{server.url}/embeddings", content=b"{not json").status_code == 400


async def test_embed_sends_batches_and_keeps_the_order(server):
    texts = [f"note number {i}" for i in range(BATCH * 2 + 5)]
    vectors = await embed(texts, _settings(server.url))
    assert vectors == [pytest.approx(vector(t)) for t in texts]
    assert [len(body["input"]) for body in server.requests] == [BATCH, BATCH, 5]
    assert all(body["model"] == MODEL for body in server.requests)


async def test_embed_puts_vectors_in_the_order_of_their_index():
    def reversed_answer(request: httpx.Request) -> httpx.Response:
        texts = json.loads(request.content)["input"]
        data = [{"index": i, "embedding": [float(i), 1.0]} for i in reversed(range(len(texts)))]
        return httpx.Response(200, json={"data": data})

    async with httpx.AsyncClient(transport=httpx.MockTransport(reversed_answer)) as client:
        assert await embed(["a", "b", "c"], _settings(), client) == [[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]]


@pytest.mark.parametrize("answer, why", [
    (httpx.Response(200, json={"vectors": []}), "answer has no data[].embedding"),
    (httpx.Response(200, text="<html>proxy</html>"), "answer has no data[].embedding"),
    (httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0]}]}), "sent 1 vectors for 2 inputs"),
    (httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]}),
     "vectors of different lengths"),
    (httpx.Response(429, json={"error": {"message": "Rate limit reached"}}), "answered HTTP 429: Rate limit reached"),
    (httpx.Response(500, text="boom"), "answered HTTP 500"),
])  # fmt: skip
async def test_embed_turns_every_bad_answer_into_one_error(answer, why):
    async with httpx.AsyncClient(transport=httpx.MockTransport(lambda _request: answer)) as client:
        with pytest.raises(EmbeddingsError, match=why.replace("[", r"\[").replace("]", r"\]")):
            await embed(["a", "b"], _settings(), client)
