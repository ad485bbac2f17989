"""``memory`` search by meaning: vectors from an OpenAI-compatible embeddings endpoint.

``POST {AGENT_EMBEDDINGS_URL}/embeddings`` with ``{"model": ..., "input": [...]}`` and the key
as a bearer token; each answer's ``data[i].embedding`` goes back in the order of its ``index``.
OpenAI, vLLM, Ollama (``/v1``) and llama.cpp's server (``--embeddings``) serve it. Every failure
(nothing listening, a refused key, an error status, an answer of another shape) is one
``EmbeddingsError`` whose message says what happened in a few words: the search then ranks by
full text alone and says so. Nothing here retries. The endpoint is the operator's, like the
model provider's, so it is not checked against a task's network policy.

``nearest`` ranks the index's lines (tools/memory_index.py) by cosine to the query; the vectors
are kept in the index by model and digest of the line's text, so each text is sent once.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import math
import operator
import sqlite3
import ssl
from array import array
from collections.abc import Sequence

import httpx
from pydantic import BaseModel, ValidationError

from core.settings import MemorySettings

BATCH = 128  # inputs per request: under every server's limit (OpenAI's is 2048)
MAX_INPUT_CHARS = 2000  # a line longer than this is embedded by its start (models take 512+ tokens)
TIMEOUT_S = 20.0
CONNECT_TIMEOUT_S = 3.0
RANKED = 50  # lines each ranking brings to the merge


class EmbeddingsError(Exception):
    """The endpoint gave no usable vectors; the message is one short clause for the model."""


class _Item(BaseModel):
    embedding: list[float]
    index: int


class _Answer(BaseModel):
    data: list[_Item]


async def embed(texts: Sequence[str], settings: MemorySettings,
                client: httpx.AsyncClient | None = None) -> list[list[float]]:
    """One vector per text, in order (EmbeddingsError when the endpoint gives none)."""
    if not settings.embeddings_url or not settings.embeddings_model:
        raise EmbeddingsError("no embeddings endpoint is configured")
    if client is None:
        timeout = httpx.Timeout(TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
        async with httpx.AsyncClient(timeout=timeout, verify=_tls(), follow_redirects=False) as fresh:
            return await embed(texts, settings, fresh)
    vectors: list[list[float]] = []
    for start in range(0, len(texts), BATCH):
        vectors += await _batch([t[:MAX_INPUT_CHARS] for t in texts[start:start + BATCH]], settings, client)
    return vectors


async def _batch(texts: list[str], settings: MemorySettings, client: httpx.AsyncClient) -> list[list[float]]:
    url = f"{(settings.embeddings_url or '').rstrip('/')}/embeddings"
    headers = {"Authorization": f"Bearer {settings.embeddings_api_key}"} if settings.embeddings_api_key else {}
    try:
        response = await client.post(url, json={"model": settings.embeddings_model, "input": texts}, headers=headers)
    except httpx.TimeoutException:
        raise EmbeddingsError(f"the embeddings endpoint did not answer within {TIMEOUT_S:.0f} s") from None
    except httpx.TransportError as exc:
        raise EmbeddingsError(f"the embeddings endpoint could not be reached ({type(exc).__name__})") from None
    if response.status_code >= 400:
        reason = _reason(response)
        if settings.embeddings_api_key:  # some servers quote the key they refused
            reason = reason.replace(settings.embeddings_api_key, "***")
        raise EmbeddingsError(f"the embeddings endpoint answered HTTP {response.status_code}{reason}")
    try:
        items = _Answer.model_validate_json(response.content).data
    except ValidationError:
        raise EmbeddingsError("the embeddings endpoint's answer has no data[].embedding") from None
    by_index = {item.index: item.embedding for item in items}
    if sorted(by_index) != list(range(len(texts))):
        raise EmbeddingsError(f"the embeddings endpoint sent {len(items)} vectors for {len(texts)} inputs")
    vectors = [by_index[i] for i in range(len(texts))]
    if not vectors[0] or any(len(v) != len(vectors[0]) for v in vectors):
        raise EmbeddingsError("the embeddings endpoint sent vectors of different lengths")
    return vectors


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every search's client: loading the CA bundle costs more than a search."""
    return httpx.create_ssl_context()


def _reason(response: httpx.Response) -> str:
    """``: message`` from an OpenAI-style error body (``{"error": {"message": ...}}`` or a string), else nothing."""
    try:
        body = response.json()
    except ValueError:
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return f": {' '.join(str(message).split())[:200]}" if message else ""


async def nearest(db: sqlite3.Connection, query: str, settings: MemorySettings) -> list[int]:
    """Ids of the lines nearest ``query`` in meaning, best first; vectors missing from the cache
    are asked for first, once per distinct text."""
    model = settings.embeddings_model or ""
    missing = await asyncio.to_thread(lambda: db.execute(
        "SELECT l.digest, MIN(l.text) FROM lines l LEFT JOIN vectors v ON v.model = ? AND v.digest = l.digest "
        "WHERE v.digest IS NULL GROUP BY l.digest", (model,)).fetchall())
    vectors = await embed([text for _, text in missing] + [query], settings)
    wanted = _unit(vectors.pop())

    def rank() -> list[int]:
        if missing:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                           [(model, digest, _unit(v).tobytes()) for (digest, _), v in zip(missing, vectors, strict=True)])
            db.execute("COMMIT")
        rows = db.execute("SELECT l.id, v.vector FROM lines l JOIN vectors v ON v.model = ? AND v.digest = l.digest",
                          (model,))
        scored = ((sum(map(operator.mul, wanted, array("f", blob))), row) for row, blob in rows
                  if len(blob) == 4 * len(wanted))
        return [row for _, row in heapq.nlargest(RANKED, scored)]

    return await asyncio.to_thread(rank)


def _unit(vector: list[float]) -> array[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return array("f", (x / norm for x in vector))
