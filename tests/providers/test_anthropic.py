"""AnthropicProvider against httpx.MockTransport (captured requests) and a real scripted server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from pydantic import TypeAdapter

from core.entries import AiMessage, Entry, ToolCall, to_chat_messages
from core.messages import (
    LEGACY_THINKING_MARKER,
    ChatMessage,
    LlmRequest,
    SystemPrompt,
    ThinkingPart,
    ToolCallRequest,
    ToolSpec,
    TurnResult,
    thinking_text,
)
from fakes.scripted import ScriptedModelServer, error, text, tool
from fakes.scripted_anthropic import overloaded
from fakes.step import Step
from providers.anthropic import AnthropicProvider
from providers.errors import ProviderError
from tests.providers.support import Recorder

BASE = "http://claude.test"
CACHED = {"type": "ephemeral"}


def signed(text: str, signature: str) -> ThinkingPart:
    return ThinkingPart(text=text, signature=signature, provider="anthropic")


def request(**overrides: Any) -> LlmRequest:
    fields: dict[str, Any] = {
        "model": "claude-test",
        "system": "You are terse.",
        "messages": [ChatMessage(role="user", content="hi")],
    }
    fields.update(overrides)
    return LlmRequest(**fields)


def user(content: str) -> dict[str, Any]:
    return {"type": "text", "text": content}


def cached(block: dict[str, Any]) -> dict[str, Any]:
    """A block that is a cache breakpoint (the latest user messages carry one)."""
    return {**block, "cache_control": CACHED}


def mock_provider(
    respond: Callable[[httpx.Request], httpx.Response], api_key: str | None = "sk-ant-test", **kwargs: Any
) -> tuple[AnthropicProvider, Recorder]:
    recorder = Recorder(respond)
    client = httpx.AsyncClient(transport=httpx.MockTransport(recorder))
    return AnthropicProvider(BASE + "/", api_key, client=client, **kwargs), recorder


def message(*content: dict[str, Any], stop_reason: str = "end_turn", **extra: Any) -> dict[str, Any]:
    usage = {"input_tokens": 10, "output_tokens": 3}
    return {"type": "message", "role": "assistant", "content": list(content), "stop_reason": stop_reason,
            "model": "claude-x", "usage": usage, **extra}


def ok(body: Any) -> Callable[[httpx.Request], httpx.Response]:
    return lambda _: httpx.Response(200, json=body)


def sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def streamed(content: bytes | AsyncIterator[bytes]) -> Callable[[httpx.Request], httpx.Response]:
    return lambda _: httpx.Response(200, content=content, headers={"content-type": "text/event-stream"})


def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, d: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": d}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


MESSAGE_START = {"type": "message_start", "message": {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": [],
    "stop_reason": None, "usage": {"input_tokens": 50, "output_tokens": 1, "cache_read_input_tokens": 400,
                                   "cache_creation_input_tokens": 0}}}


def finish(stop_reason: str, output_tokens: int) -> list[dict[str, Any]]:
    return [
        {"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": output_tokens}},
        {"type": "message_stop"},
    ]


async def raises(provider: AnthropicProvider, req: LlmRequest | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await provider.complete(req or request())
    return info.value


# -- request mapping ----------------------------------------------------------


def test_to_wire_caches_the_stable_system_block_and_not_the_dynamic_one():
    system = SystemPrompt(stable="Stable rules.\n", dynamic="\nDate: today")
    body = AnthropicProvider(BASE).to_wire(request(system=system))
    assert body["system"] == [
        {"type": "text", "text": "Stable rules.\n", "cache_control": CACHED},
        {"type": "text", "text": "\nDate: today"},
    ]
    assert all(m["role"] != "system" for m in body["messages"])


def test_to_wire_sends_a_plain_string_system_prompt_as_one_cached_block():
    body = AnthropicProvider(BASE).to_wire(request())
    assert body["system"] == [{"type": "text", "text": "You are terse.", "cache_control": CACHED}]


@pytest.mark.parametrize(
    ("system", "expected"),
    [
        (SystemPrompt(dynamic="dynamic only"), [{"type": "text", "text": "dynamic only"}]),
        (SystemPrompt(stable="stable only", dynamic="  \n"),
         [{"type": "text", "text": "stable only", "cache_control": CACHED}]),
        (SystemPrompt(stable=" \n", dynamic="\n"), None),
        ("", None),
    ],
)
def test_to_wire_leaves_out_empty_system_blocks(system: SystemPrompt | str, expected: list[dict[str, Any]] | None):
    body = AnthropicProvider(BASE).to_wire(request(system=system))
    assert body.get("system") == expected


def test_to_wire_defaults_max_tokens_and_omits_unset_fields():
    body = AnthropicProvider(BASE).to_wire(request())
    assert body == {
        "model": "claude-test",
        "max_tokens": 8192,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": CACHED}],
        "messages": [{"role": "user", "content": [cached(user("hi"))]}],
    }


def test_to_wire_includes_tools_max_tokens_temperature_and_stream_when_set():
    spec = ToolSpec(name="shell", description="Run a command", parameters={"type": "object"})
    body = AnthropicProvider(BASE).to_wire(request(tools=[spec], max_tokens=64, temperature=0.0, stream=True))
    assert body["tools"] == [
        {"name": "shell", "description": "Run a command", "input_schema": {"type": "object"}, "cache_control": CACHED}
    ]
    assert (body["max_tokens"], body["temperature"], body["stream"]) == (64, 0.0, True)


def test_to_wire_leaves_out_temperature_from_api_version_2026_10_21():
    body = AnthropicProvider(BASE, version="2026-10-21").to_wire(request(temperature=0.5))
    assert "temperature" not in body


def test_to_wire_pairs_tool_use_with_results_first_in_the_next_user_message():
    history = [
        ChatMessage(role="user", content="list and read"),
        ChatMessage(
            role="assistant",
            content="Two things.",
            tool_calls=[
                ToolCallRequest(id="t1", name="shell", arguments={"command": "ls"}),
                ToolCallRequest(id="t2", name="file", arguments={"path": "a"}),
            ],
        ),
        ChatMessage(role="tool", tool_call_id="t1", name="shell", content="a.txt"),
        ChatMessage(role="tool", tool_call_id="t2", name="file", content="deferred"),
        ChatMessage(role="user", content="<system-reminder>one call per turn</system-reminder>"),
        ChatMessage(role="assistant", content="Done."),
    ]
    assert AnthropicProvider(BASE).to_wire(request(messages=history))["messages"] == [
        {"role": "user", "content": [cached(user("list and read"))]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Two things."},
                {"type": "tool_use", "id": "t1", "name": "shell", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "t2", "name": "file", "input": {"path": "a"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "deferred"},
                cached(user("<system-reminder>one call per turn</system-reminder>")),
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]


def test_to_wire_moves_tool_results_before_user_text_that_came_first():
    history = [
        ChatMessage(role="assistant", tool_calls=[ToolCallRequest(id="t1", name="shell")]),
        ChatMessage(role="user", content="also, hurry"),
        ChatMessage(role="tool", tool_call_id="t1", name="shell", content=""),
    ]
    messages = AnthropicProvider(BASE).to_wire(request(messages=history))["messages"]
    assert messages[1] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1"}, cached(user("also, hurry"))],
    }


def test_to_wire_merges_same_role_neighbours_and_skips_empty_messages():
    history = [
        ChatMessage(role="user", content="one"),
        ChatMessage(role="assistant", content="  "),
        ChatMessage(role="user", content="two"),
        ChatMessage(role="assistant", content="a"),
        ChatMessage(role="assistant", content="b"),
    ]
    assert AnthropicProvider(BASE).to_wire(request(messages=history))["messages"] == [
        {"role": "user", "content": [user("one"), cached(user("two"))]},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    ]


def test_to_wire_sends_a_placeholder_object_for_a_call_whose_arguments_did_not_parse():
    bad = ToolCallRequest(id="t1", name="file", arguments_raw="[1]", parse_error="not an object")
    messages = AnthropicProvider(BASE).to_wire(request(messages=[ChatMessage(role="assistant", tool_calls=[bad])]))
    assert messages["messages"][0]["content"] == [
        {"type": "tool_use", "id": "t1", "name": "file", "input": {"_invalid_arguments": "[1]"}}]


@pytest.mark.parametrize(
    "thinking",
    [
        "2+2 is 4",  # a plain string, as recorded before thinking was typed
        [ThinkingPart(text="2+2 is 4", provider="openai")],  # reasoning_content of an OpenAI-compatible model
        [ThinkingPart(text="2+2 is 4", provider="anthropic")],  # Anthropic's, but without its signature
        [ThinkingPart(text="2+2 is 4", signature="sig", provider="openai")],  # signed by another provider
        [ThinkingPart(text="2+2 is 4", signature="sig")],  # origin unknown
    ],
)
def test_to_wire_drops_unsigned_or_foreign_thinking(thinking: Any):
    said = ChatMessage(role="assistant", content="4", thinking=thinking)
    messages = AnthropicProvider(BASE).to_wire(request(messages=[said]))["messages"]
    assert messages[0]["content"] == [{"type": "text", "text": "4"}]


def test_signed_thinking_round_trips_from_response_into_the_next_request():
    thought = {"type": "thinking", "thinking": "Let me list files.", "signature": "EqQBCkYIBx+sig=="}
    hidden = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}
    body = message(
        thought,
        hidden,
        {"type": "text", "text": "Listing."},
        {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"command": "ls"}},
        stop_reason="tool_use",
    )
    provider = AnthropicProvider(BASE)
    result = provider.parse_response(body)
    assert result.thinking == [
        signed("Let me list files.", "EqQBCkYIBx+sig=="),
        ThinkingPart(redacted_data="EmwKAhgBEgy3va", provider="anthropic"),
    ]
    said = ChatMessage(role="assistant", content=result.content, tool_calls=result.tool_calls, thinking=result.thinking)
    said = ChatMessage.model_validate_json(said.model_dump_json())  # as it comes back out of the history
    answered = ChatMessage(role="tool", tool_call_id="toolu_1", content="a.txt")
    wire = provider.to_wire(request(messages=[ChatMessage(role="user", content="go"), said, answered]))
    assert wire["messages"][1]["content"] == body["content"]


def test_typed_thinking_is_json_safe_with_a_readable_view():
    parts = [signed("step 1", "s"), ThinkingPart(redacted_data="d", provider="anthropic")]
    said = ChatMessage(role="assistant", thinking=parts)
    assert json.loads(said.model_dump_json())["thinking"] == [
        {"text": "step 1", "signature": "s", "redacted_data": None, "provider": "anthropic", "id": None},
        {"text": "", "signature": None, "redacted_data": "d", "provider": "anthropic", "id": None},
    ]
    assert ChatMessage.model_validate_json(said.model_dump_json()) == said
    assert thinking_text(parts) == "step 1\n\n[redacted thinking]"
    assert thinking_text([ThinkingPart(text="plain")]) == "plain"
    assert thinking_text([]) == thinking_text(None) == ""


LEGACY_BLOCKS = [{"type": "thinking", "thinking": "step 1", "signature": "s"}, {"type": "redacted_thinking", "data": "d"}]
LEGACY_ENCODED = LEGACY_THINKING_MARKER + json.dumps(LEGACY_BLOCKS, ensure_ascii=False)


@pytest.mark.parametrize(
    ("recorded", "parts"),
    [
        (LEGACY_ENCODED, [signed("step 1", "s"), ThinkingPart(redacted_data="d", provider="anthropic")]),
        ("plain", [ThinkingPart(text="plain")]),
        (None, []),
        ("", []),
        (LEGACY_THINKING_MARKER + "{not json", []),
    ],
)
def test_thinking_recorded_as_a_string_before_it_was_typed_still_validates(recorded: str | None,
                                                                           parts: list[ThinkingPart]):
    assert ChatMessage(role="assistant", thinking=recorded).thinking == parts
    assert TurnResult.model_validate_json(json.dumps({"content": "ok", "thinking": recorded})).thinking == parts
    adapter = TypeAdapter(Entry)
    ai = adapter.validate_json(json.dumps({"kind": "ai_message", "text": "ok", "thinking": recorded}))
    call = adapter.validate_json(json.dumps({"kind": "tool_call", "calls": [], "thinking": recorded}))
    assert isinstance(ai, AiMessage) and isinstance(call, ToolCall)
    assert ai.thinking == call.thinking == parts


def test_legacy_signed_thinking_goes_back_to_the_wire_as_the_blocks_it_encoded():
    entry = TypeAdapter(Entry).validate_python({"kind": "ai_message", "text": "ok", "thinking": LEGACY_ENCODED})
    wire = AnthropicProvider(BASE).to_wire(request(messages=to_chat_messages([entry])))
    assert wire["messages"][0]["content"] == [*LEGACY_BLOCKS, {"type": "text", "text": "ok"}]
    assert thinking_text(entry.thinking) == "step 1\n\n[redacted thinking]"


async def test_complete_posts_to_v1_messages_with_key_and_version_headers():
    provider, recorder = mock_provider(ok(message({"type": "text", "text": "hey"})), version="2026-10-21")
    await provider.complete(request())
    sent = recorder.requests[0]
    assert (sent.method, str(sent.url)) == ("POST", "http://claude.test/v1/messages")
    assert sent.headers["x-api-key"] == "sk-ant-test"
    assert sent.headers["anthropic-version"] == "2026-10-21"
    assert sent.headers["content-type"] == "application/json"
    assert "authorization" not in sent.headers
    assert recorder.body["messages"] == [{"role": "user", "content": [cached(user("hi"))]}]


async def test_complete_sends_no_key_header_without_key():
    provider, recorder = mock_provider(ok(message({"type": "text", "text": "hey"})), api_key=None)
    await provider.complete(request())
    assert "x-api-key" not in recorder.requests[0].headers
    assert recorder.requests[0].headers["anthropic-version"] == "2023-06-01"


# -- response parsing ---------------------------------------------------------


def test_parse_response_reads_text_tool_calls_and_model():
    body = message(
        {"type": "text", "text": "Checking "},
        {"type": "tool_use", "id": "toolu_a", "name": "shell", "input": {"command": "ls"}},
        {"type": "text", "text": "now."},
        {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}},
        stop_reason="tool_use",
    )
    result = AnthropicProvider(BASE).parse_response(body)
    assert (result.content, result.finish_reason, result.model, result.thinking) == (
        "Checking now.", "tool_calls", "claude-x", []
    )
    assert [(c.id, c.name, c.arguments, c.parse_error) for c in result.tool_calls] == [
        ("toolu_a", "shell", {"command": "ls"}, None)
    ]


@pytest.mark.parametrize(
    ("stop_reason", "finish_reason"),
    [("end_turn", "stop"), ("tool_use", "tool_calls"), ("max_tokens", "length"),
     ("stop_sequence", "stop_sequence"), ("refusal", "refusal")],
)
def test_parse_response_maps_stop_reason_to_finish_reason(stop_reason: str, finish_reason: str):
    body = message({"type": "text", "text": "x"}, stop_reason=stop_reason)
    assert AnthropicProvider(BASE).parse_response(body).finish_reason == finish_reason


def test_parse_response_counts_cache_reads_and_writes_in_usage():
    usage = {"input_tokens": 20, "output_tokens": 7, "cache_read_input_tokens": 1000,
             "cache_creation_input_tokens": 300}
    result = AnthropicProvider(BASE).parse_response(message({"type": "text", "text": "x"}, usage=usage))
    u = result.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (1320, 7, 1000, 300)


@pytest.mark.parametrize("value", [[1, 2], "ls", None])
def test_parse_response_turns_non_object_tool_input_into_a_parse_error(value: Any):
    body = message({"type": "tool_use", "id": "t", "name": "shell", "input": value}, stop_reason="tool_use")
    call = AnthropicProvider(BASE).parse_response(body).tool_calls[0]
    assert (call.arguments, call.arguments_raw) == ({}, json.dumps(value))
    assert call.parse_error and "JSON object" in call.parse_error


@pytest.mark.parametrize("body", [{}, {"content": None}, [], "text", {"content": "hello"}])
def test_parse_response_rejects_bodies_without_content_blocks(body: Any):
    with pytest.raises(ProviderError) as info:
        AnthropicProvider(BASE).parse_response(body)
    assert (info.value.kind, info.value.retryable) == ("bad_response", False)


def test_parse_response_raises_retryable_error_for_an_overloaded_error_object():
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(ProviderError) as info:
        AnthropicProvider(BASE).parse_response(body)
    assert (info.value.kind, info.value.retryable) == ("overloaded", True)


# -- errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type", "kind", "retryable"),
    [
        (529, "overloaded_error", "overloaded", True),
        (429, "rate_limit_error", "rate_limited", True),
        (500, "api_error", "server_error", True),
        (400, "invalid_request_error", "bad_request", False),
        (401, "authentication_error", "auth", False),
        (403, "permission_error", "auth", False),
        (404, "not_found_error", "not_found", False),
    ],
)
async def test_complete_classifies_http_error_status(status: int, error_type: str, kind: str, retryable: bool):
    body = {"type": "error", "error": {"type": error_type, "message": f"the api says {status}"}}
    provider, _ = mock_provider(lambda _: httpx.Response(status, json=body))
    err = await raises(provider)
    assert (err.status, err.kind, err.retryable, err.provider) == (status, kind, retryable, "anthropic")
    assert err.message == f"the api says {status}"


async def test_complete_reads_retry_after_seconds_on_429():
    provider, _ = mock_provider(lambda _: httpx.Response(429, headers={"retry-after": "12"}, json={}))
    err = await raises(provider)
    assert (err.retryable, err.retry_after_s) == (True, 12.0)


async def test_complete_prefers_retry_after_ms_on_529():
    headers = {"retry-after": "12", "retry-after-ms": "250"}
    provider, _ = mock_provider(lambda _: httpx.Response(529, headers=headers, json={}))
    err = await raises(provider)
    assert (err.kind, err.retryable, err.retry_after_s) == ("overloaded", True, 0.25)


async def test_complete_never_puts_the_api_key_in_an_error():
    body = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key sk-ant-secret"}}
    provider, _ = mock_provider(lambda _: httpx.Response(401, json=body), api_key="sk-ant-secret")
    err = await raises(provider)
    assert "sk-ant-secret" not in str(err) and err.kind == "auth" and not err.retryable


async def test_complete_maps_timeout_and_connection_failures_to_retryable_errors():
    def timeout(req: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=req)

    def refused(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=req)

    assert ((e := await raises(mock_provider(timeout)[0])).kind, e.retryable) == ("timeout", True)
    assert ((e := await raises(mock_provider(refused)[0])).kind, e.retryable) == ("connection", True)


# -- streaming ----------------------------------------------------------------


async def test_stream_folds_events_into_text_thinking_tool_calls_and_usage():
    body = sse(
        MESSAGE_START,
        {"type": "ping"},
        start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "Need "}),
        delta(0, {"type": "thinking_delta", "thinking": "files."}),
        delta(0, {"type": "signature_delta", "signature": "sig-xyz"}),
        stop(0),
        start(1, {"type": "text", "text": ""}),
        delta(1, {"type": "text_delta", "text": "Let me "}),
        delta(1, {"type": "text_delta", "text": "look."}),
        stop(1),
        start(2, {"type": "tool_use", "id": "toolu_9", "name": "shell", "input": {}}),
        delta(2, {"type": "input_json_delta", "partial_json": ""}),
        delta(2, {"type": "input_json_delta", "partial_json": '{"comm'}),
        delta(2, {"type": "input_json_delta", "partial_json": 'and": "ls -la"}'}),
        stop(2),
        *finish("tool_use", 42),
    )
    provider, recorder = mock_provider(streamed(body))
    deltas: list[str] = []
    result = await provider.complete(request(stream=True), deltas.append)
    assert recorder.body["stream"] is True
    assert deltas == ["Let me ", "look."]
    assert result.content == "Let me look."
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("toolu_9", "shell", {"command": "ls -la"})]
    assert result.thinking == [signed("Need files.", "sig-xyz")]
    assert (result.finish_reason, result.model) == ("tool_calls", "claude-x")
    u = result.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (450, 42, 400, 0)


async def test_stream_keeps_invalid_tool_json_as_a_parse_error():
    body = sse(
        MESSAGE_START,
        start(0, {"type": "tool_use", "id": "toolu_1", "name": "file", "input": {}}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"path": '}),
        stop(0),
        *finish("tool_use", 5),
    )
    call = (await mock_provider(streamed(body))[0].complete(request(stream=True))).tool_calls[0]
    assert (call.arguments, call.arguments_raw) == ({}, '{"path": ')
    assert call.parse_error and "not valid JSON" in call.parse_error


async def test_stream_ending_without_message_stop_is_a_retryable_stream_cut():
    body = sse(MESSAGE_START, start(0, {"type": "text", "text": ""}), delta(0, {"type": "text_delta", "text": "par"}))
    deltas: list[str] = []
    provider, _ = mock_provider(streamed(body))
    with pytest.raises(ProviderError) as info:
        await provider.complete(request(stream=True), deltas.append)
    assert (info.value.kind, info.value.retryable) == ("stream_cut", True)
    assert deltas == ["par"]


async def test_stream_broken_mid_body_is_a_retryable_stream_cut():
    async def body() -> AsyncIterator[bytes]:
        yield sse(MESSAGE_START, start(0, {"type": "text", "text": ""}))
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    err = await raises(mock_provider(streamed(body()))[0], request(stream=True))
    assert (err.kind, err.retryable) == ("stream_cut", True)


@pytest.mark.parametrize(
    ("error_type", "kind", "retryable"),
    [("overloaded_error", "overloaded", True), ("api_error", "server_error", True),
     ("rate_limit_error", "rate_limited", True), ("invalid_request_error", "bad_request", False),
     ("some_future_error", "stream_error", True)],
)
async def test_stream_error_event_is_classified_by_its_type(error_type: str, kind: str, retryable: bool):
    error_event = {"type": "error", "error": {"type": error_type, "message": "Overloaded"}}
    body = sse(MESSAGE_START, start(0, {"type": "text", "text": ""}), error_event)
    err = await raises(mock_provider(streamed(body))[0], request(stream=True))
    assert (err.kind, err.retryable) == (kind, retryable)
    assert "Overloaded" in err.message


async def test_stream_falls_back_to_a_json_body_when_the_server_does_not_stream():
    provider, _ = mock_provider(ok(message({"type": "text", "text": "whole answer"})))
    deltas: list[str] = []
    result = await provider.complete(request(stream=True), deltas.append)
    assert (result.content, deltas) == ("whole answer", ["whole answer"])


async def test_stream_rejects_an_event_that_is_not_json():
    body = b"event: message_start\ndata: {nope\n\n"
    err = await raises(mock_provider(streamed(body))[0], request(stream=True))
    assert (err.kind, err.retryable) == ("bad_response", False)


# -- real HTTP against the scripted server -----------------------------------


async def test_complete_over_http_reads_a_scripted_message_and_sends_headers():
    step = Step(text="Checking.", tool_calls=[("shell", {"command": "ls"})], usage=(120, 9), cache=(100, 0))
    with ScriptedModelServer([step]) as server:
        provider = AnthropicProvider(server.anthropic_url, "sk-ant-x")
        result = await provider.complete(request())
        await provider.aclose()
        server.assert_consumed()
    assert (result.content, result.finish_reason) == ("Checking.", "tool_calls")
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("toolu_scripted_1_0", "shell", {"command": "ls"})]
    assert (result.usage.input_tokens, result.usage.cache_read_tokens, result.usage.output_tokens) == (120, 100, 9)
    assert server.request_headers[0]["x-api-key"] == "sk-ant-x"
    assert server.request_headers[0]["anthropic-version"] == "2023-06-01"
    assert server.requests[0]["system"] == [{"type": "text", "text": "You are terse.", "cache_control": CACHED}]


async def test_stream_over_http_delivers_text_thinking_and_tool_calls():
    step = Step(text="The quick brown fox", reasoning="think first", tool_calls=[("file", {"path": "a.txt"})])
    with ScriptedModelServer([step]) as server:
        provider = AnthropicProvider(server.anthropic_url)
        deltas: list[str] = []
        result = await provider.complete(request(stream=True), deltas.append)
        await provider.aclose()
    assert len(deltas) > 1 and "".join(deltas) == result.content == "The quick brown fox"
    assert result.tool_calls[0].arguments == {"path": "a.txt"}
    assert result.thinking == [signed("think first", "scripted-signature-1")]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10, 5)


async def test_thinking_round_trips_over_http_into_the_next_request_first():
    steps = [Step(reasoning="plan", tool_calls=[("shell", {"command": "pwd"})]), text("done")]
    with ScriptedModelServer(steps) as server:
        provider = AnthropicProvider(server.anthropic_url)
        first = await provider.complete(request(stream=True))
        said = ChatMessage(role="assistant", content=first.content, tool_calls=first.tool_calls, thinking=first.thinking)
        result = ChatMessage(role="tool", tool_call_id=first.tool_calls[0].id, content="/tmp")
        await provider.complete(request(messages=[ChatMessage(role="user", content="go"), said, result]))
        await provider.aclose()
        server.assert_consumed()
    assistant, answer = server.requests[1]["messages"][1:]
    assert assistant["content"][0] == {"type": "thinking", "thinking": "plan", "signature": "scripted-signature-1"}
    assert assistant["content"][1] == {"type": "tool_use", "id": "toolu_scripted_1_0", "name": "shell",
                                       "input": {"command": "pwd"}}
    assert answer == {"role": "user", "content": [
        cached({"type": "tool_result", "tool_use_id": "toolu_scripted_1_0", "content": "/tmp"})]}


async def test_scripted_errors_over_http_are_classified():
    steps = [overloaded({"retry-after": "2"}), error(429, "slow down", {"retry-after-ms": "1500"}), error(401, "bad key")]
    with ScriptedModelServer(steps) as server:
        provider = AnthropicProvider(server.anthropic_url, "sk-ant-x")
        busy = await raises(provider)
        limited = await raises(provider, request(stream=True))
        denied = await raises(provider)
        await provider.aclose()
    assert (busy.status, busy.kind, busy.retryable, busy.retry_after_s) == (529, "overloaded", True, 2.0)
    assert (limited.kind, limited.retryable, limited.retry_after_s, limited.message) == (
        "rate_limited", True, 1.5, "slow down"
    )
    assert (denied.kind, denied.retryable, denied.message) == ("auth", False, "bad key")


async def test_cut_stream_over_http_is_a_retryable_stream_cut():
    with ScriptedModelServer([Step(text="this answer never finishes", cut_stream=True)]) as server:
        provider = AnthropicProvider(server.anthropic_url)
        deltas: list[str] = []
        with pytest.raises(ProviderError) as info:
            await provider.complete(request(stream=True), deltas.append)
        await provider.aclose()
    assert (info.value.kind, info.value.retryable) == ("stream_cut", True)
    assert deltas and "".join(deltas) != "this answer never finishes"


async def test_overloaded_error_event_over_http_is_retryable():
    with ScriptedModelServer([Step(text="half of it", stream_error="overloaded_error")]) as server:
        provider = AnthropicProvider(server.anthropic_url)
        err = await raises(provider, request(stream=True))
        await provider.aclose()
    assert (err.kind, err.retryable) == ("overloaded", True)


async def test_unexpected_call_over_http_gets_an_anthropic_shaped_400():
    with ScriptedModelServer([tool("shell", command="ls")]) as server:
        provider = AnthropicProvider(server.anthropic_url)
        await provider.complete(request())
        err = await raises(provider)
        await provider.aclose()
    assert (err.status, err.kind, err.retryable) == (400, "bad_request", False)
    assert err.message == "scripted model: unexpected call #2"
