"""The Anthropic wire fixtures (tests/providers/fixtures/anthropic/, hand-written from the
Messages API docs) replayed through AnthropicProvider: parsing, what goes back on the wire,
and error classification; the official SDK checks that the fixtures are the API's shapes."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter

from core.messages import ChatMessage, LlmRequest, SystemPrompt, TurnResult
from providers.anthropic import AnthropicProvider
from tests.providers.replay import check, load, replay, transport

FIXTURES = load("anthropic")
STREAM_EVENT: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
ERROR: TypeAdapter[Any] = TypeAdapter(anthropic.types.ErrorResponse)


def provider(fixture: dict[str, Any]) -> AnthropicProvider:
    return AnthropicProvider("http://claude.test", "sk-ant-test", client=httpx.AsyncClient(transport=transport(fixture)))


REQUEST = LlmRequest(model="claude-sonnet-4-5", system=SystemPrompt(stable="Be brief."),
                     messages=[ChatMessage(role="user", content="What's the weather in San Francisco?")])


def test_there_are_fixtures_for_every_shape_the_brief_names():
    assert {"tool_use", "tool_use_stream", "thinking_tool_use", "thinking_tool_use_stream", "redacted_thinking",
            "redacted_thinking_stream", "overloaded_529", "rate_limit_429", "prompt_too_long_400",
            "stream_error_overloaded"} <= set(FIXTURES)


@pytest.mark.parametrize("name", FIXTURES)
async def test_fixture_is_parsed_and_classified_as_expected(name: str):
    fixture = FIXTURES[name]
    outcome, deltas = await replay(provider(fixture), fixture, REQUEST)
    check(outcome, deltas, fixture["expect"])


@pytest.mark.parametrize("name", [n for n, f in FIXTURES.items() if "assistant_blocks" in f["expect"]])
async def test_fixture_thinking_goes_back_unchanged_first_in_the_assistant_turn(name: str):
    fixture = FIXTURES[name]
    result, _ = await replay(provider(fixture), fixture, REQUEST)
    assert isinstance(result, TurnResult)
    said = ChatMessage(role="assistant", content=result.content, tool_calls=result.tool_calls, thinking=result.thinking)
    said = ChatMessage.model_validate_json(said.model_dump_json())  # as it comes back out of the history
    answers = [ChatMessage(role="tool", tool_call_id=c.id, content="64°F, fog") for c in result.tool_calls]
    follow_up = REQUEST.model_copy(update={"messages": [*REQUEST.messages, said, *answers], "thinking_budget": 2048})
    body = AnthropicProvider("http://claude.test").to_wire(follow_up)
    assert body["messages"][1] == {"role": "assistant", "content": fixture["expect"]["assistant_blocks"]}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}  # the turn began with its thinking


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_is_what_the_sdk_reads_as_the_api_shape(name: str):
    answer = FIXTURES[name]["response"]
    if "events" in answer:
        for event in answer["events"]:
            if event["event"] == "error":
                ERROR.validate_python(event["data"])
            elif event["event"] != "ping":  # the SDK skips pings
                assert STREAM_EVENT.validate_python(event["data"]).type == event["event"]
    elif answer["status"] == 200:
        Message.model_validate(answer["json"])
    else:
        assert ERROR.validate_python(answer["json"]).error.type


@pytest.mark.parametrize("name", [n for n, f in FIXTURES.items() if "usage" in f["expect"]])
async def test_usage_counts_every_prompt_token_as_the_sdk_accumulates_them(name: str):
    fixture = FIXTURES[name]
    answer = fixture["response"]
    if "events" in answer:
        message: Any = None
        json_bufs: dict[int, bytes] = {}
        for event in answer["events"]:
            if event["event"] != "ping":
                message = accumulate_event(event=STREAM_EVENT.validate_python(event["data"]),
                                           current_snapshot=message, json_bufs=json_bufs)
    else:
        message = Message.model_validate(answer["json"])
    usage = message.usage
    read, write = usage.cache_read_input_tokens or 0, usage.cache_creation_input_tokens or 0
    result, _ = await replay(provider(fixture), fixture, REQUEST)
    assert isinstance(result, TurnResult)
    got = result.usage
    assert (got.input_tokens, got.output_tokens, got.cache_read_tokens, got.cache_write_tokens) == (
        usage.input_tokens + read + write, usage.output_tokens, read, write)


async def test_an_empty_stream_asked_again_unstreamed_and_empty_again_is_no_outage():
    """The replayed server answers the unstreamed retry with the same empty stream: the call
    fails for good (waiting would not change the answer), saying both ways were empty."""
    fixture = {"stream": True, "response": {"status": 200, "events": []}}
    outcome, _ = await replay(provider(fixture), fixture, REQUEST)
    check(outcome, [], {"error": {"kind": "empty_response", "retryable": False,
                                  "message": "nothing, streamed and not streamed"}})
