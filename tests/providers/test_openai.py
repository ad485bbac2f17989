"""OpenAIProvider against httpx.MockTransport (captured requests) and a real scripted server."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from core.messages import ChatMessage, LlmRequest, SystemPrompt, ThinkingPart, ToolCallRequest, ToolSpec
from fakes.scripted import ScriptedModelServer, error, text
from fakes.step import Step
from providers.errors import ProviderError
from providers.openai import OpenAIProvider
from tests.providers.support import Recorder

BASE = "http://model.test/v1"


def request(**overrides: Any) -> LlmRequest:
    fields: dict[str, Any] = {
        "model": "gpt-test",
        "system": "You are terse.",
        "messages": [ChatMessage(role="user", content="hi")],
    }
    fields.update(overrides)
    return LlmRequest(**fields)


def mock_provider(respond: Callable[[httpx.Request], httpx.Response], api_key: str | None = "sk-test"):
    recorder = Recorder(respond)
    client = httpx.AsyncClient(transport=httpx.MockTransport(recorder))
    return OpenAIProvider(BASE + "/", api_key, client=client), recorder


def completion(message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], **extra}


def ok(body: Any) -> Callable[[httpx.Request], httpx.Response]:
    return lambda _: httpx.Response(200, json=body)


def sse(*chunks: dict[str, Any] | str) -> bytes:
    lines = [f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n" for c in chunks]
    return "".join(lines).encode()


def streamed(content: bytes | AsyncIterator[bytes]) -> Callable[[httpx.Request], httpx.Response]:
    return lambda _: httpx.Response(200, content=content, headers={"content-type": "text/event-stream"})


def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


async def raises(provider: OpenAIProvider, req: LlmRequest | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await provider.complete(req or request())
    return info.value


# -- request mapping ----------------------------------------------------------


def test_to_wire_puts_system_message_first_then_user():
    body = OpenAIProvider(BASE).to_wire(request())
    assert body["model"] == "gpt-test"
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi"},
    ]


def test_to_wire_maps_assistant_tool_calls_and_tool_results():
    history = [
        ChatMessage(role="user", content="list files"),
        ChatMessage(
            role="assistant",
            tool_calls=[
                ToolCallRequest(id="c1", name="shell", arguments={"command": "ls"}),
                ToolCallRequest(id="c2", name="file", arguments_raw="{oops", parse_error="bad JSON"),
            ],
        ),
        ChatMessage(role="tool", tool_call_id="c1", name="shell", content="a.txt"),
        ChatMessage(role="assistant", content="done"),
    ]
    messages = OpenAIProvider(BASE).to_wire(request(messages=history))["messages"]
    assert messages[2] == {
        "role": "assistant",
        "content": "",  # never null: llama.cpp answers 500
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"command": "ls"}'}},
            {"id": "c2", "type": "function",
             "function": {"name": "file", "arguments": '{"_invalid_arguments": "{oops"}'}},
        ],
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}
    assert messages[4] == {"role": "assistant", "content": "done"}


def test_to_wire_keeps_assistant_text_alongside_tool_calls():
    message = ChatMessage(
        role="assistant", content="Looking.", tool_calls=[ToolCallRequest(id="c1", name="shell")]
    )
    wire = OpenAIProvider(BASE).to_wire(request(messages=[message]))["messages"][1]
    assert wire["content"] == "Looking."
    assert wire["tool_calls"][0]["function"]["arguments"] == "{}"


def test_to_wire_omits_tools_and_sampling_when_unset_and_says_stream_false():
    body = OpenAIProvider(BASE).to_wire(request())
    assert set(body) == {"model", "messages", "stream"}
    assert body["stream"] is False


def test_to_wire_includes_tools_sampling_and_stream_flags_when_set():
    spec = ToolSpec(name="shell", description="Run a command", parameters={"type": "object"})
    body = OpenAIProvider(BASE).to_wire(request(tools=[spec], max_tokens=64, temperature=0.0, stream=True))
    function = {"name": "shell", "description": "Run a command", "parameters": {"type": "object"}}
    assert body["tools"] == [{"type": "function", "function": function}]
    assert body["tool_choice"] == "auto"
    assert body["max_tokens"] == 64
    assert body["temperature"] == 0.0
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_complete_posts_to_chat_completions_with_bearer_key():
    provider, recorder = mock_provider(ok(completion({"content": "hey"})))
    await provider.complete(request())
    sent = recorder.requests[0]
    assert sent.method == "POST"
    assert str(sent.url) == "http://model.test/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert recorder.body["messages"][0]["role"] == "system"


async def test_complete_sends_no_auth_header_without_key():
    provider, recorder = mock_provider(ok(completion({"content": "hey"})), api_key=None)
    await provider.complete(request())
    assert "authorization" not in recorder.requests[0].headers


# -- response parsing ---------------------------------------------------------


def test_parse_response_reads_text_finish_reason_and_model():
    result = OpenAIProvider(BASE).parse_response(completion({"content": "Hello"}, model="gpt-x"))
    assert (result.content, result.finish_reason, result.model) == ("Hello", "stop", "gpt-x")
    assert result.tool_calls == []
    assert result.thinking == []


def test_parse_response_decodes_tool_call_arguments():
    body = completion(
        {
            "content": None,
            "tool_calls": [
                {"id": "a", "function": {"name": "shell", "arguments": '{"command": "ls"}'}},
                {"id": "b", "type": "function", "function": {"name": "noop", "arguments": ""}},
            ],
        }
    )
    result = OpenAIProvider(BASE).parse_response(body)
    assert result.content == ""
    assert [(c.id, c.name, c.arguments, c.parse_error) for c in result.tool_calls] == [
        ("a", "shell", {"command": "ls"}, None),
        ("b", "noop", {}, None),
    ]


@pytest.mark.parametrize("raw", ['{"command": "ls"', "[1, 2]", '"ls"', "null"])
def test_parse_response_keeps_malformed_arguments_as_parse_error(raw: str):
    body = completion({"tool_calls": [{"id": "a", "function": {"name": "shell", "arguments": raw}}]})
    call = OpenAIProvider(BASE).parse_response(body).tool_calls[0]
    assert call.arguments == {}
    assert call.arguments_raw == raw
    assert call.parse_error


def test_parse_response_generates_ids_for_calls_without_id():
    calls = [{"function": {"name": "a", "arguments": "{}"}}, {"function": {"name": "b"}}]
    body = completion({"tool_calls": calls})
    assert [c.id for c in OpenAIProvider(BASE).parse_response(body).tool_calls] == ["call_0", "call_1"]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_parse_response_reads_reasoning_as_thinking(field: str):
    result = OpenAIProvider(BASE).parse_response(completion({"content": "4", field: "2+2"}))
    assert result.thinking == [ThinkingPart(text="2+2", provider="openai")]


def test_parse_response_reads_usage_with_cached_tokens():
    usage = {"prompt_tokens": 120, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 100}}
    result = OpenAIProvider(BASE).parse_response(completion({"content": "x"}, usage=usage))
    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (120, 7, 100)


@pytest.mark.parametrize(
    "body", [{}, {"choices": []}, {"choices": None}, [], "text", {"choices": [{"index": 0}]}]
)
def test_parse_response_rejects_bodies_without_a_message(body: Any):
    with pytest.raises(ProviderError) as info:
        OpenAIProvider(BASE).parse_response(body)
    assert (info.value.kind, info.value.retryable) == ("bad_response", False)


# -- errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (429, "rate_limited", True),
        (500, "server_error", True),
        (503, "server_error", True),
        (400, "bad_request", False),
        (401, "auth", False),
        (403, "auth", False),
        (404, "not_found", False),
    ],
)
async def test_complete_classifies_http_error_status(status: int, kind: str, retryable: bool):
    body = {"error": {"message": f"the api says {status}", "type": "x"}}
    provider, _ = mock_provider(lambda _: httpx.Response(status, json=body))
    err = await raises(provider)
    assert (err.status, err.kind, err.retryable) == (status, kind, retryable)
    assert err.message == f"the api says {status}"
    assert err.provider == "openai"


async def test_complete_reads_retry_after_seconds_on_429():
    provider, _ = mock_provider(lambda _: httpx.Response(429, headers={"Retry-After": "7"}, json={}))
    err = await raises(provider)
    assert (err.retryable, err.retry_after_s) == (True, 7.0)


async def test_complete_prefers_retry_after_ms_on_429():
    headers = {"Retry-After": "7", "retry-after-ms": "1500"}
    provider, _ = mock_provider(lambda _: httpx.Response(429, headers=headers, json={}))
    assert (await raises(provider)).retry_after_s == 1.5


async def test_complete_reports_html_error_page_with_502_as_retryable():
    page = "<html><head><title>502 Bad Gateway</title></head><body>" + "x" * 500 + "</body></html>"
    html = {"content-type": "text/html"}
    provider, _ = mock_provider(lambda _: httpx.Response(502, text=page, headers=html))
    err = await raises(provider)
    assert (err.status, err.kind, err.retryable) == (502, "server_error", True)
    assert "502 Bad Gateway" in err.message
    assert len(err.message) <= 200


async def test_complete_rejects_invalid_json_with_200():
    provider, _ = mock_provider(lambda _: httpx.Response(200, text="{not json"))
    err = await raises(provider)
    assert (err.kind, err.retryable) == ("bad_response", False)
    assert "{not json" in err.message


async def test_complete_rejects_response_without_choices():
    provider, _ = mock_provider(ok({"id": "x", "choices": []}))
    err = await raises(provider)
    assert (err.kind, err.retryable) == ("bad_response", False)
    assert "no choices" in err.message


async def test_complete_maps_timeout_to_retryable_timeout():
    def respond(req: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=req)

    err = await raises(mock_provider(respond)[0])
    assert (err.kind, err.retryable, err.status) == ("timeout", True, None)


async def test_complete_maps_remote_protocol_error_to_retryable_connection():
    def respond(req: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("peer closed connection", request=req)

    err = await raises(mock_provider(respond)[0])
    assert (err.kind, err.retryable) == ("connection", True)


async def test_complete_maps_connection_refused_to_retryable_connection():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAIProvider(f"http://127.0.0.1:{port}/v1", timeout_s=5)
    try:
        err = await raises(provider)
    finally:
        await provider.aclose()
    assert (err.kind, err.retryable) == ("connection", True)


async def test_complete_times_out_against_a_slow_server():
    with ScriptedModelServer([Step(text="late", delay_s=2.0)]) as server:
        provider = OpenAIProvider(server.url, timeout_s=0.2)
        err = await raises(provider)
        await provider.aclose()
    assert (err.kind, err.retryable) == ("timeout", True)


async def test_complete_never_puts_the_api_key_in_an_error():
    body = {"error": {"message": "Incorrect API key provided: sk-secret-123"}}
    recorder = Recorder(lambda _: httpx.Response(401, json=body))
    client = httpx.AsyncClient(transport=httpx.MockTransport(recorder))
    err = await raises(OpenAIProvider(BASE, "sk-secret-123", client=client))
    assert "sk-secret-123" not in str(err)
    assert err.kind == "auth"


async def test_complete_wraps_unexpected_failures_in_provider_error():
    def respond(req: httpx.Request) -> httpx.Response:
        raise RuntimeError("boom")

    err = await raises(mock_provider(respond)[0])
    assert (err.kind, err.retryable) == ("unexpected", False)


# -- real HTTP against the scripted server -----------------------------------


async def test_complete_parses_scripted_tool_calls_over_http():
    step = Step(text="Checking.", tool_calls=[("shell", {"command": "ls"}), ("file", "{broken")])
    with ScriptedModelServer([step]) as server:
        provider = OpenAIProvider(server.url)
        result = await provider.complete(request())
        await provider.aclose()
        server.assert_consumed()
    assert result.content == "Checking."
    assert result.finish_reason == "tool_calls"
    assert result.tool_calls[0].arguments == {"command": "ls"}
    assert result.tool_calls[1].parse_error and result.tool_calls[1].arguments_raw == "{broken"
    assert server.requests[0]["messages"][0] == {"role": "system", "content": "You are terse."}


async def test_complete_classifies_scripted_errors_over_http():
    steps = [error(429, "slow down", {"Retry-After": "3"}), error(401, "bad key")]
    with ScriptedModelServer(steps) as server:
        provider = OpenAIProvider(server.url, "sk-x")
        limited = await raises(provider)
        denied = await raises(provider, request(stream=True))
        await provider.aclose()
    assert (limited.kind, limited.retryable, limited.retry_after_s, limited.message) == (
        "rate_limited", True, 3.0, "slow down"
    )
    assert (denied.kind, denied.retryable, denied.status) == ("auth", False, 401)


# -- streaming ----------------------------------------------------------------


async def test_stream_delivers_text_deltas_to_on_text_in_order():
    with ScriptedModelServer([text("The quick brown fox jumps")]) as server:
        provider = OpenAIProvider(server.url)
        deltas: list[str] = []
        result = await provider.complete(request(stream=True), deltas.append)
        await provider.aclose()
    assert len(deltas) > 1
    assert "".join(deltas) == "The quick brown fox jumps" == result.content
    assert result.finish_reason == "stop"
    assert server.requests[0]["stream"] is True


async def test_stream_accumulates_tool_call_fragments_and_usage():
    step = Step(
        text="On it.",
        reasoning="need files",
        tool_calls=[("shell", {"command": "ls -la /tmp"}), ("file", {"action": "read", "path": "a.txt"})],
        usage=(321, 45),
    )
    with ScriptedModelServer([step, step]) as server:
        provider = OpenAIProvider(server.url)
        streamed = await provider.complete(request(stream=True))
        plain = await provider.complete(request())
        await provider.aclose()
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [
        ("shell", {"command": "ls -la /tmp"}),
        ("file", {"action": "read", "path": "a.txt"}),
    ]
    assert [c.id for c in streamed.tool_calls] == ["call_1_0", "call_1_1"]
    assert (streamed.usage.input_tokens, streamed.usage.output_tokens) == (321, 45)
    assert (streamed.thinking, streamed.finish_reason) == ([ThinkingPart(text="need files", provider="openai")],
                                                          "tool_calls")
    assert streamed.model_dump(exclude={"tool_calls"}) == plain.model_dump(exclude={"tool_calls"})


async def test_stream_joins_interleaved_fragments_by_index():
    body = sse(
        delta({"role": "assistant", "content": ""}),
        delta({"tool_calls": [{"index": 0, "id": "x", "function": {"name": "a", "arguments": ""}}]}),
        delta({"tool_calls": [{"index": 1, "function": {"name": "b", "arguments": '{"k"'}}]}),
        delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"n": '}}]}),
        delta({"tool_calls": [{"index": 1, "function": {"arguments": ': "v"}'}}]}),
        delta({"tool_calls": [{"index": 0, "function": {"arguments": "1"}}]}),
        delta({}, "tool_calls"),
        {"choices": [], "usage": {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 4}}},
        "[DONE]",
    )
    provider, recorder = mock_provider(streamed(body))
    result = await provider.complete(request(stream=True))
    first, second = result.tool_calls
    assert (first.id, first.name, first.arguments, first.arguments_raw) == ("x", "a", {}, '{"n": 1')
    assert first.parse_error
    assert (second.id, second.name, second.arguments) == ("call_1", "b", {"k": "v"})
    assert result.usage.cache_read_tokens == 4
    assert recorder.requests[0].headers["accept"] == "text/event-stream"


async def test_stream_accepts_end_without_done_after_finish_reason():
    provider, _ = mock_provider(streamed(sse(delta({"content": "hi"}), delta({}, "stop"))))
    result = await provider.complete(request(stream=True))
    assert (result.content, result.finish_reason) == ("hi", "stop")


async def test_stream_cut_off_raises_retryable_stream_cut():
    with ScriptedModelServer([Step(text="this answer never finishes", cut_stream=True)]) as server:
        provider = OpenAIProvider(server.url)
        deltas: list[str] = []
        with pytest.raises(ProviderError) as info:
            await provider.complete(request(stream=True), deltas.append)
        await provider.aclose()
    assert (info.value.kind, info.value.retryable) == ("stream_cut", True)
    assert deltas and "".join(deltas) != "this answer never finishes"


async def test_stream_broken_mid_body_raises_retryable_stream_cut():
    async def body() -> AsyncIterator[bytes]:
        yield sse(delta({"content": "partial"}))
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    provider, _ = mock_provider(streamed(body()))
    err = await raises(provider, request(stream=True))
    assert (err.kind, err.retryable) == ("stream_cut", True)


async def test_stream_error_event_raises_provider_error_classified_by_its_code():
    body = sse(delta({"content": "a"}), {"error": {"message": "overloaded", "code": 503}})
    provider, _ = mock_provider(streamed(body))
    err = await raises(provider, request(stream=True))
    assert (err.kind, err.retryable, err.status) == ("server_error", True, 503)
    assert err.message == "overloaded"


async def test_stream_falls_back_to_json_body_when_server_does_not_stream():
    provider, _ = mock_provider(ok(completion({"content": "whole answer"})))
    deltas: list[str] = []
    result = await provider.complete(request(stream=True), deltas.append)
    assert result.content == "whole answer"
    assert deltas == ["whole answer"]


async def test_stream_rejects_non_json_non_sse_body():
    plain = {"content-type": "text/plain"}
    provider, _ = mock_provider(lambda _: httpx.Response(200, text="hello", headers=plain))
    err = await raises(provider, request(stream=True))
    assert (err.kind, err.retryable) == ("bad_response", False)


def test_the_two_system_prompt_parts_reach_the_openai_wire_as_one_text():
    from prompts import build_system_prompt

    system = build_system_prompt(workspace="/w", date="2026-01-01", tool_names=["message"])
    assert system.stable.strip() and system.dynamic.strip()
    body = OpenAIProvider("http://x/v1").to_wire(LlmRequest(model="m", system=system, messages=[]))
    sent = body["messages"][0]["content"]
    assert sent == f"{system.stable.rstrip()}\n{system.dynamic.lstrip()}" == system.text()
    assert "\u200b" not in sent and "cache-boundary" not in sent
    assert "<environment>" in sent and "<agent_loop>" in sent
    assert sent.index("</security>") < sent.index("<environment>")


@pytest.mark.parametrize(
    ("system", "sent"),
    [
        (SystemPrompt(stable="Stable.\n", dynamic="\nDate"), "Stable.\nDate"),
        (SystemPrompt(stable="Stable.  \n"), "Stable.  \n"),
        ("You are terse.", "You are terse."),
    ],
)
def test_openai_system_message_joins_the_parts_at_one_newline(system: SystemPrompt | str, sent: str):
    body = OpenAIProvider(BASE).to_wire(request(system=system))
    assert body["messages"][0] == {"role": "system", "content": sent}
