"""Recorded answers of OpenAI, vLLM, Ollama and llama.cpp (tests/providers/fixtures/, written
from their documentation and sources, each file naming where its shape comes from), replayed
over real HTTP by the scripted server, read by the adapter: what it parses, and how it
classifies each server's errors.

    NAME.json   {"source", "status", "headers", "body"}: a JSON answer
    NAME.sse    an event stream as sent, HTTP 200 (its first line, an SSE comment, is the source)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.errors import ErrorKind
from core.messages import ChatMessage, LlmRequest, ToolCallRequest, ToolSpec
from fakes import scripted_strict
from fakes.scripted import ScriptedModelServer
from fakes.step import Step
from providers.errors import SUMMARY_LIMIT, ProviderError
from providers.openai import OpenAIProvider

FIXTURES = Path(__file__).parent / "fixtures"
SERVERS = ("openai", "vllm", "ollama", "llamacpp")
SHELL = ToolSpec(name="shell", description="Run a command", parameters={"type": "object"})


def replay(name: str) -> Step:
    """The fixture as the scripted server's answer."""
    path = FIXTURES / name
    if path.suffix == ".sse":
        return Step(raw=path.read_text(encoding="utf-8"), headers={"content-type": "text/event-stream"})
    recorded = json.loads(path.read_text(encoding="utf-8"))
    body = recorded["body"]
    return Step(status=recorded["status"], headers=recorded["headers"],
                raw=body if isinstance(body, str) else json.dumps(body))


def request(stream: bool) -> LlmRequest:
    return LlmRequest(model="m", system="Be brief.", messages=[ChatMessage(role="user", content="go")],
                      tools=[SHELL], stream=stream)


async def answer(name: str, stream: bool | None = None):
    """The adapter's reading of the fixture: a TurnResult, or the ProviderError it raised."""
    stream = name.endswith(".sse") if stream is None else stream
    with ScriptedModelServer([replay(name)]) as server:
        provider = OpenAIProvider(server.url, "sk-fixture")
        try:
            return await provider.complete(request(stream))
        except ProviderError as err:
            return err
        finally:
            await provider.aclose()
            server.assert_consumed()


def test_every_fixture_names_its_source():
    files = sorted(p for server in SERVERS for p in (FIXTURES / server).iterdir())
    assert len(files) >= 30
    for path in files:
        if path.suffix == ".sse":
            assert path.read_text(encoding="utf-8").startswith(": source: "), path
        else:
            assert json.loads(path.read_text(encoding="utf-8"))["source"], path


# -- answers ----------------------------------------------------------------------------

TOOL_CALLS = [  # fixture, (tool name, arguments), (prompt tokens, completion tokens), cached
    ("openai/tool_call.json", ("shell", {"command": "ls -la"}), (1117, 46), 1024),
    ("openai/tool_call_stream.sse", ("file", {"action": "read", "path": "README.md"}), (820, 22), 0),
    ("vllm/tool_call.json", ("shell", {"command": "git status"}), (402, 23), 0),
    ("vllm/tool_call_stream.sse", ("shell", {"command": "pytest -q tests/"}), (388, 21), 0),
    ("ollama/tool_call.json", ("file", {"action": "write", "content": "hello\n", "path": "notes.txt"}), (239, 31), 0),
    ("ollama/tool_call_stream.sse", ("shell", {"command": "uname -a"}), (198, 19), 0),
    ("llamacpp/tool_call.json", ("shell", {"command": "cat README.md"}), (512, 19), 0),
    ("llamacpp/tool_call_stream.sse", ("file", {"action": "read", "path": "setup.cfg"}), (640, 24), 0),
]


@pytest.mark.parametrize(("name", "call", "usage", "cached"), TOOL_CALLS, ids=[t[0] for t in TOOL_CALLS])
async def test_a_recorded_tool_call_is_parsed(name: str, call: tuple[str, dict[str, Any]], usage: tuple[int, int],
                                              cached: int):
    result = await answer(name)
    assert not isinstance(result, ProviderError), result
    assert [(c.name, c.arguments, c.parse_error) for c in result.tool_calls] == [(*call, None)]
    assert result.tool_calls[0].id and result.content == ""
    assert result.finish_reason == "tool_calls"
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.cache_read_tokens) == (*usage, cached)
    assert not result.usage.estimated


async def test_a_stream_without_usage_gets_an_estimate():
    result = await answer("ollama/text_stream_no_usage.sse")
    assert not isinstance(result, ProviderError), result
    assert (result.content, result.finish_reason) == ("The tests all pass now.", "stop")
    assert result.usage.estimated and result.usage.output_tokens == 6  # 23 characters / 4, rounded up
    assert result.usage.input_tokens > 0


# -- errors -----------------------------------------------------------------------------

ERRORS = [  # fixture, kind, retryable, status, retry after (s), start of the message
    ("openai/context_overflow.json", ErrorKind.CONTEXT_OVERFLOW, False, 400, None, "This model's maximum context length is 128000"),
    ("openai/bad_request.json", "bad_request", False, 400, None, "Invalid parameter: messages with role 'tool'"),
    ("openai/rate_limit.json", "rate_limited", True, 429, 20.0, "Rate limit reached for gpt-4o"),
    ("openai/server_error.json", "server_error", True, 500, None, "The server had an error"),
    ("openai/stream_error.sse", "server_error", True, 500, None, "The server had an error"),
    ("vllm/context_overflow.json", ErrorKind.CONTEXT_OVERFLOW, False, 400, None, "This model's maximum context length is 4096"),
    ("vllm/context_overflow_v0.json", ErrorKind.CONTEXT_OVERFLOW, False, 400, None, "The decoder prompt (length 9012)"),
    ("vllm/bad_request.json", "bad_request", False, 400, None, "Expecting ',' delimiter"),
    ("vllm/server_error.json", "server_error", True, 500, None, "EngineCore encountered an issue"),
    ("vllm/stream_error.sse", "server_error", True, 500, None, "EngineCore encountered an issue"),
    ("ollama/context_overflow.json", ErrorKind.CONTEXT_OVERFLOW, False, 400, None, "the input length exceeds the context length"),
    ("ollama/bad_request.json", "bad_request", False, 400, None, "invalid tool call arguments"),
    ("ollama/model_not_found.json", "not_found", False, 404, None, 'model "llama3.3" not found'),
    ("ollama/busy.json", "server_error", True, 503, None, "server busy, please try again."),
    ("ollama/server_error.json", "server_error", True, 500, None, "llama runner process has terminated"),
    ("llamacpp/context_overflow.json", ErrorKind.CONTEXT_OVERFLOW, False, 400, None, "the request exceeds the available context"),
    ("llamacpp/context_overflow_stream.sse", ErrorKind.CONTEXT_OVERFLOW, False, 400, None,
     "the request exceeds the available context"),
    ("llamacpp/null_content.json", "server_error", True, 500, None, "Cannot subscript null at row 23, column 40:"),
    ("llamacpp/bad_request.json", "bad_request", False, 400, None, "Invalid tool_choice: any"),
    ("llamacpp/loading.json", "server_error", True, 503, None, "Loading model"),
]


@pytest.mark.parametrize(("name", "kind", "retryable", "status", "retry_after", "message"), ERRORS,
                         ids=[e[0] for e in ERRORS])
async def test_a_recorded_error_is_classified(name, kind, retryable, status, retry_after, message):
    err = await answer(name)
    assert isinstance(err, ProviderError), err
    assert (err.kind, err.retryable, err.status, err.retry_after_s) == (kind, retryable, status, retry_after)
    assert err.message.startswith(message)
    assert "\n" not in err.message and len(err.message) <= SUMMARY_LIMIT
    assert err.body and "sk-fixture" not in err.body


@pytest.mark.parametrize("name", [e[0] for e in ERRORS if e[0].endswith(".json")])
async def test_a_recorded_error_reads_the_same_on_a_streamed_request(name: str):
    plain, streamed = await answer(name, stream=False), await answer(name, stream=True)
    assert isinstance(plain, ProviderError) and isinstance(streamed, ProviderError)
    assert (plain.kind, plain.retryable, plain.status, plain.message) == (
        streamed.kind, streamed.retryable, streamed.status, streamed.message)


async def test_llama_cpp_overflow_reads_the_same_in_a_stream_as_without():
    plain, streamed = await answer("llamacpp/context_overflow.json"), await answer("llamacpp/context_overflow_stream.sse")
    assert isinstance(plain, ProviderError) and isinstance(streamed, ProviderError)
    assert (plain.kind, plain.retryable, plain.status, plain.message) == (
        streamed.kind, streamed.retryable, streamed.status, streamed.message)


# -- the request side -------------------------------------------------------------------


def test_the_documented_tool_round_trip_request_passes_strict_mode():
    recorded = json.loads((FIXTURES / "openai" / "request_tool_round_trip.json").read_text(encoding="utf-8"))
    assert scripted_strict.check(recorded["body"]) is None


def test_our_tool_round_trip_request_has_the_documented_shape():
    recorded = json.loads((FIXTURES / "openai" / "request_tool_round_trip.json").read_text(encoding="utf-8"))["body"]
    messages = [
        ChatMessage(role="user", content="What is in the README?"),
        ChatMessage(role="assistant", tool_calls=[ToolCallRequest(id="call_12345xyz", name="shell",
                                                                  arguments={"command": "cat README.md"})]),
        ChatMessage(role="tool", tool_call_id="call_12345xyz", name="shell", content="# Durable agent\n"),
        ChatMessage(role="user", content="Thanks. Now list the tests."),
    ]
    shell = ToolSpec(**recorded["tools"][0]["function"])
    ours = OpenAIProvider("http://x/v1").to_wire(LlmRequest(model="gpt-4o", system="You are a coding agent.",
                                                            messages=messages, tools=[shell]))
    for message in ours["messages"]:
        for call in message.get("tool_calls", []):  # the same object; spacing is free
            call["function"]["arguments"] = json.dumps(json.loads(call["function"]["arguments"]), separators=(",", ":"))
    assert ours == recorded
