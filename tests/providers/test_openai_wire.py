"""What the OpenAI-compatible adapter sends and how it reads failures, against the scripted
server over real HTTP (strict mode: it refuses what llama.cpp, vLLM and OpenAI refuse) and,
for byte-level stream shapes, httpx.MockTransport."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs

from core.errors import ErrorKind
from core.messages import ChatMessage, LlmRequest, ToolCallRequest, ToolSpec
from fakes.scripted import ScriptedModelServer, text
from fakes.step import Step
from providers.arguments import INVALID_ARGUMENTS, RAW_LIMIT
from providers.errors import SUMMARY_LIMIT, ProviderError
from providers.openai import OpenAIProvider
from tests.providers.support import Recorder

SHELL = ToolSpec(name="shell", description="Run a command",
                 parameters={"type": "object", "properties": {"command": {"type": "string"}}})


def request(**overrides: Any) -> LlmRequest:
    fields: dict[str, Any] = {"model": "m", "system": "Be brief.", "messages": [ChatMessage(role="user", content="hi")]}
    fields.update(overrides)
    return LlmRequest(**fields)


def history_with_calls(*calls: ToolCallRequest) -> list[ChatMessage]:
    return [
        ChatMessage(role="user", content="go"),
        ChatMessage(role="assistant", tool_calls=list(calls)),
        *(ChatMessage(role="tool", tool_call_id=c.id, name=c.name, content="result") for c in calls),
    ]


async def call(server: ScriptedModelServer, req: LlmRequest | None = None, on_text=None):
    provider = OpenAIProvider(server.url, "sk-test")
    try:
        return await provider.complete(req or request(), on_text)
    finally:
        await provider.aclose()


async def failure(server: ScriptedModelServer, req: LlmRequest | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await call(server, req)
    return info.value


def mock(body: bytes, content_type: str = "text/event-stream", status: int = 200) -> OpenAIProvider:
    respond = Recorder(lambda _: httpx.Response(status, content=body, headers={"content-type": content_type}))
    return OpenAIProvider("http://model.test/v1", client=httpx.AsyncClient(transport=httpx.MockTransport(respond)))


async def mock_failure(body: bytes, content_type: str = "text/event-stream", stream: bool = True) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await mock(body, content_type).complete(request(stream=stream))
    return info.value


# -- what goes on the wire ------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_a_tool_round_trip_passes_the_strict_server(stream: bool):
    calls = [ToolCallRequest(id="c1", name="shell", arguments={"command": "ls"})]
    req = request(tools=[SHELL], messages=history_with_calls(*calls), stream=stream)
    with ScriptedModelServer([text("done")]) as server:
        result = await call(server, req)
        server.assert_consumed()
    sent = server.requests[0]
    assert result.content == "done"
    assert sent["tool_choice"] == "auto"
    assert sent["stream"] is stream
    assert sent["messages"][2] == {
        "role": "assistant", "content": "",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"command": "ls"}'}}],
    }


def test_no_tool_choice_is_sent_without_tools():
    assert "tool_choice" not in OpenAIProvider("http://x/v1").to_wire(request())


async def test_stream_false_is_on_the_wire_when_not_streaming():
    with ScriptedModelServer([text("whole")]) as server:
        await call(server, request(stream=False))
    assert server.requests[0]["stream"] is False
    assert "stream_options" not in server.requests[0]


@pytest.mark.parametrize(
    "raw",
    ['{"command": "ls', "[1, 2]", "x" * (RAW_LIMIT + 500), '{"command": "He said "hi""}'],
    ids=["cut-off", "not-an-object", "over-long", "bad-quotes"],
)
async def test_invalid_arguments_go_back_as_a_valid_placeholder_object(raw: str):
    bad = ToolCallRequest(id="c1", name="shell", arguments_raw=raw, parse_error="not JSON")
    with ScriptedModelServer([text("ok")]) as server:
        await call(server, request(tools=[SHELL], messages=history_with_calls(bad)))
        server.assert_consumed()  # the strict server parses history arguments, as vLLM does
    sent = server.requests[0]["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(sent) == {INVALID_ARGUMENTS: raw[:RAW_LIMIT]}


async def test_the_strict_server_refuses_what_the_adapter_used_to_send():
    """The old wire (content null, raw invalid arguments, no tool_choice) is refused as the
    real servers refuse it, so a regression shows up in every test."""
    old = {"model": "m", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{oops"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
    ], "tools": [{"type": "function", "function": {"name": "shell", "parameters": {}}}], "tool_choice": "auto"}
    with ScriptedModelServer([text("never")]) as server:
        null = httpx.post(server.url + "/chat/completions", json=old)
        old["messages"][1]["content"] = ""
        raw = httpx.post(server.url + "/chat/completions", json=old)
        del old["tool_choice"]
        old["messages"][1]["tool_calls"][0]["function"]["arguments"] = "{}"
        no_choice = httpx.post(server.url + "/chat/completions", json=old)
    assert (null.status_code, null.json()["error"]["type"]) == (500, "server_error")
    assert (raw.status_code, raw.json()["error"]["type"]) == (400, "BadRequestError")
    assert no_choice.status_code == 400 and "tool_choice" in no_choice.json()["error"]["message"]
    assert len(server.rejected) == 3 and server.hits() == 3


# -- errors inside a stream, classified like the same error without one --------------


ERRORS = [  # (error object, kind, retryable, status)
    ({"code": 400, "message": "the request exceeds the available context size, try increasing it",
      "type": "exceed_context_size_error"}, ErrorKind.CONTEXT_OVERFLOW, False, 400),
    ({"message": "Expecting ',' delimiter: line 1 column 54 (char 53)", "type": "BadRequestError",
      "param": None, "code": 400}, "bad_request", False, 400),
    ({"message": "slow down", "type": "tokens", "param": None, "code": "rate_limit_exceeded"}, "rate_limited", True, 429),
    ({"message": "The server had an error", "type": "server_error", "param": None, "code": None}, "server_error", True, 500),
    ({"code": 503, "message": "Loading model", "type": "unavailable_error"}, "server_error", True, 503),
]


@pytest.mark.parametrize(("error", "kind", "retryable", "status"), ERRORS)
async def test_an_error_in_a_stream_is_classified_like_the_same_http_error(error, kind, retryable, status):
    plain = httpx.Response(status, json={"error": error})
    provider = OpenAIProvider("http://m/v1", client=httpx.AsyncClient(transport=httpx.MockTransport(lambda _: plain)))
    with pytest.raises(ProviderError) as without_stream:
        await provider.complete(request())
    chunk = {"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]}
    in_stream = await mock_failure(f"data: {json.dumps(chunk)}\n\ndata: {json.dumps({'error': error})}\n\n".encode())
    llama_line = await mock_failure(f"error: {json.dumps(error)}\n\ndata: [DONE]\n\n".encode())
    answered_200 = await mock_failure(json.dumps({"error": error}).encode(), "application/json", stream=False)
    expected = (kind, retryable, status, error["message"].split(":")[0])
    for err in (without_stream.value, in_stream, llama_line, answered_200):
        assert (err.kind, err.retryable, err.status, err.message.split(":")[0].removesuffix(" (rate_limit_exceeded)")) == expected


async def test_an_error_event_before_done_is_not_an_empty_success():
    """llama.cpp writes its error as an "error:" line, which plain SSE parsers drop, then [DONE]."""
    line = b'error: {"code":500,"message":"slot unavailable","type":"server_error"}\n\ndata: [DONE]\n\n'
    err = await mock_failure(line)
    assert (err.kind, err.retryable, err.message) == ("server_error", True, "slot unavailable")


async def test_an_unknown_error_object_is_retried():
    err = await mock_failure(b'data: {"error": "something broke"}\n\n')
    assert (err.kind, err.retryable, err.status, err.message) == ("api_error", True, None, "something broke")


async def test_an_empty_200_body_is_transient():
    with ScriptedModelServer([Step(raw="")]) as server:
        err = await failure(server, request(stream=False))
    assert (err.kind, err.retryable, err.status) == ("empty_response", True, None)


async def test_an_empty_answer_streamed_and_unstreamed_is_no_outage():
    """The same empty answer both ways: the server has nothing for this request, and waiting
    for it (the task's provider wait) would not change that."""
    with ScriptedModelServer([Step(raw=""), Step(raw="")]) as server:
        err = await failure(server, request(stream=True))
        sent = [body["stream"] for body in server.requests]
    assert (err.kind, err.retryable, err.status) == ("empty_response", False, None)
    assert "nothing, streamed and not streamed" in err.message
    assert sent == [True, False]


SHELL = ToolSpec(name="shell", description="Run a command.", parameters={"type": "object", "properties": {}})


async def test_an_empty_stream_for_a_call_with_tools_is_answered_unstreamed_and_remembered():
    """llama-cpp-python's chatml-function-calling handler refuses to stream a call that may use
    tools after sending 200 and its headers: the stream has no event. The call is asked again
    unstreamed, says so once, and later calls with tools go unstreamed from the start; calls
    without tools still stream."""
    steps = [Step(tool_calls=[("shell", {"command": "echo hello"})]), text("done"), text("plain")]
    with ScriptedModelServer(steps, streams_tools=False) as server:
        provider = OpenAIProvider(server.url, "sk-test")
        shown: list[str] = []
        try:
            first = await provider.complete(request(stream=True, tools=[SHELL]), shown.append)
            second = await provider.complete(request(stream=True, tools=[SHELL]))
            third = await provider.complete(request(stream=True))
        finally:
            await provider.aclose()
        sent = [body["stream"] for body in server.requests]
        assert server.empty_streams == 1
    assert [c.name for c in first.tool_calls] == ["shell"] and first.tool_calls[0].arguments == {"command": "echo hello"}
    assert first.notice is not None and "empty stream" in first.notice and server.url in first.notice
    assert (second.content, second.notice) == ("done", None)
    assert (third.content, third.notice) == ("plain", None)
    assert sent == [True, False, False, True]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_truncated_200_body_is_transient(stream: bool):
    cut = '{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assist'
    with ScriptedModelServer([Step(raw=cut, headers={"content-type": "application/json"})]) as server:
        err = await failure(server, request(stream=stream))
    assert (err.kind, err.retryable) == ("truncated_response", True)


async def test_a_stream_of_only_done_is_an_empty_answer_asked_again_unstreamed():
    whole = {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}

    def respond(req: httpx.Request) -> httpx.Response:
        if json.loads(req.content)["stream"]:
            return httpx.Response(200, content=b"data: [DONE]\n\n", headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json=whole)

    recorder = Recorder(respond)
    provider = OpenAIProvider("http://model.test/v1", client=httpx.AsyncClient(transport=httpx.MockTransport(recorder)))
    result = await provider.complete(request(stream=True))
    assert result.content == "hi"
    assert result.notice is None  # no tools: nothing to remember
    assert [json.loads(r.content)["stream"] for r in recorder.requests] == [True, False]


async def test_a_json_error_sent_as_an_event_stream_is_read_as_the_error_it_is():
    body = json.dumps({"error": {"message": "model 'x' not found", "type": "not_found_error", "code": None}}, indent=2)
    err = await mock_failure(body.encode())
    assert (err.kind, err.retryable, err.status, err.message) == ("not_found", False, 404, "model 'x' not found")


async def test_a_body_that_is_neither_sse_nor_json_is_a_bad_response_streamed_or_not():
    streamed = await mock_failure(b"<html>Welcome to the hotel wifi</html>")
    plain = await mock_failure(b"<html>Welcome to the hotel wifi</html>", "text/html", stream=False)
    assert (streamed.kind, streamed.retryable) == (plain.kind, plain.retryable) == ("bad_response", False)


async def test_sse_lines_split_anywhere_across_network_reads_are_joined():
    chunks = [b'data: {"choices":[{"index":0,"delta":{"content":"a\\r', b'b"},"finish_reason":null}]}\r',
              b"\n\r\n", b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\r\n\r\ndata: [DO', b"NE]\r\n\r\n"]

    async def body():
        for piece in chunks:
            yield piece

    transport = httpx.MockTransport(lambda _: httpx.Response(200, content=body(), headers={"content-type": "text/event-stream"}))
    provider = OpenAIProvider("http://m/v1", client=httpx.AsyncClient(transport=transport))
    result = await provider.complete(request(stream=True))
    assert (result.content, result.finish_reason) == ("a\rb", "stop")


# -- one-line errors, the whole body in the log --------------------------------------


async def test_a_long_error_is_one_short_line_and_its_body_is_logged_once():
    template_dump = "Cannot subscript null at row 23, column 40:\n" + "    {%- set x = message.content %}\n" * 60
    body = {"error": {"code": 500, "message": template_dump, "type": "server_error"}}
    with ScriptedModelServer([Step(status=500, error_body=body)]) as server, capture_logs() as logs:
        err = await failure(server)
    assert len(template_dump) > 1900
    assert "\n" not in err.message and len(err.message) <= SUMMARY_LIMIT
    assert err.message.startswith("Cannot subscript null at row 23, column 40:")
    assert (err.kind, err.retryable) == ("server_error", True)
    logged = [e for e in logs if e["event"] == "provider error body"]
    assert len(logged) == 1 and logged[0]["log_level"] == "warning"
    assert json.loads(logged[0]["body"]) == body and err.body == logged[0]["body"]


async def test_the_api_key_is_kept_out_of_the_logged_body():
    body = {"error": {"message": "Incorrect API key provided: sk-test", "type": "invalid_request_error"}}
    with ScriptedModelServer([Step(status=401, error_body=body)]) as server, capture_logs() as logs:
        err = await failure(server)
    assert "sk-test" not in err.message and "sk-test" not in (err.body or "")
    assert all("sk-test" not in json.dumps(e) for e in logs)


# -- usage you can trust --------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_reported_usage_is_taken_as_it_is(stream: bool):
    with ScriptedModelServer([Step(text="hello", usage=(1234, 56))]) as server:
        result = await call(server, request(stream=stream))
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.estimated) == (1234, 56, False)


@pytest.mark.parametrize("stream", [False, True])
async def test_missing_usage_is_estimated_from_the_request_and_the_reply(stream: bool):
    reply = "x" * 401  # 101 tokens at 4 characters each, rounded up
    step = Step(text=reply, tool_calls=[("shell", {"command": "ls"})], report_usage=False)
    with ScriptedModelServer([step]) as server:
        result = await call(server, request(stream=stream, messages=[ChatMessage(role="user", content="y" * 4000)]))
    sent = json.dumps(server.requests[0], ensure_ascii=False, separators=(",", ":"))
    usage = result.usage
    assert usage.estimated
    assert usage.input_tokens == -(-len(sent) // 4) and usage.input_tokens > 1000
    assert usage.output_tokens == -(-(len(reply) + len("shell") + len('{"command": "ls"}')) // 4)


async def test_include_usage_ignored_by_the_server_is_estimated():
    body = (b'data: {"choices":[{"index":0,"delta":{"content":"four"},"finish_reason":null}]}\n\n'
            b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    result = await mock(body).complete(request(stream=True))
    assert result.usage.estimated and (result.usage.output_tokens, result.usage.input_tokens > 0) == (1, True)


@pytest.mark.parametrize("wire", ["openai", "anthropic", "openai_responses"])
async def test_a_stream_that_stalls_after_starting_ends_the_attempt_as_retryable(wire: str):
    """Some chunks, then silence with the connection open: the attempt ends after the idle
    limit instead of the whole attempt's 10 minutes, and says the stream stalled."""
    from core.settings import ProviderSettings
    from providers.factory import make_provider

    with ScriptedModelServer([Step(text="a long answer that stops", stall_after=2)]) as server:
        settings = ProviderSettings(openai_base_url=server.url, openai_api_key="k", anthropic_base_url=server.anthropic_url,
                                    anthropic_api_key="k", stream_idle_s=0.5)
        provider = make_provider(wire, settings)
        shown: list[str] = []
        try:
            with pytest.raises(ProviderError) as info:
                await asyncio.wait_for(provider.complete(request(stream=True), shown.append), 20)
        finally:
            await provider.aclose()
    assert (info.value.kind, info.value.retryable) == ("stream_stalled", True)
    assert "stream stalled: no data for 0.5 s" in info.value.message


async def test_keep_alive_comments_are_not_data_and_a_slow_first_chunk_is_not_a_stall():
    from providers.sse import IdleGuard, StreamStalled

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self):
            await asyncio.sleep(0.3)  # longer than the limit, before any data: allowed
            yield b'data: {"x": 1}\n\n'
            for _ in range(4):
                await asyncio.sleep(0.1)
                yield b": ping\n\n"  # keep-alives only: the gap since the data grows

    chunks = []
    with pytest.raises(StreamStalled):
        async for chunk in IdleGuard(Body(), 0.25):
            chunks.append(chunk)
    assert chunks[0] == b'data: {"x": 1}\n\n' and len(chunks) in (2, 3)
