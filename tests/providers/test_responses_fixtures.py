"""The OpenAI Responses wire fixtures (tests/providers/fixtures/responses/, hand-written from
OpenAI's docs) replayed through ResponsesProvider: parsing, what goes back on the wire, and
error classification; the official SDK checks that the fixtures are the API's shapes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from openai.types.shared import ErrorObject
from pydantic import TypeAdapter

from core.messages import ChatMessage, LlmRequest, SystemPrompt, TurnResult
from providers.responses import ResponsesProvider
from tests.providers.replay import check, load, replay, transport

FIXTURES = load("responses")
STREAM_EVENT: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
REQUEST = LlmRequest(model="gpt-4.1", system=SystemPrompt(stable="Be brief."),
                     messages=[ChatMessage(role="user", content="What's the weather in Paris?")])


def provider(fixture: dict[str, Any]) -> ResponsesProvider:
    return ResponsesProvider("http://oa.test/v1", "sk-test", client=httpx.AsyncClient(transport=transport(fixture)))


def test_there_are_fixtures_for_every_shape_the_brief_names():
    assert {"function_call", "function_call_stream", "reasoning_function_call", "reasoning_stream", "text_stream",
            "stream_failed", "stream_error_rate_limit", "context_length_400"} <= set(FIXTURES)


@pytest.mark.parametrize("name", FIXTURES)
async def test_fixture_is_parsed_and_classified_as_expected(name: str):
    fixture = FIXTURES[name]
    outcome, deltas = await replay(provider(fixture), fixture, REQUEST)
    check(outcome, deltas, fixture["expect"])


@pytest.mark.parametrize("name", [n for n, f in FIXTURES.items() if "assistant_items" in f["expect"]])
async def test_fixture_reasoning_and_calls_go_back_as_input_items(name: str):
    fixture = FIXTURES[name]
    result, _ = await replay(provider(fixture), fixture, REQUEST)
    assert isinstance(result, TurnResult)
    said = ChatMessage(role="assistant", content=result.content, tool_calls=result.tool_calls, thinking=result.thinking)
    said = ChatMessage.model_validate_json(said.model_dump_json())  # as it comes back out of the history
    answers = [ChatMessage(role="tool", tool_call_id=c.id, content="18°C, sunny") for c in result.tool_calls]
    body = ResponsesProvider("http://oa.test/v1").to_wire(
        REQUEST.model_copy(update={"messages": [*REQUEST.messages, said, *answers]}))
    items = fixture["expect"]["assistant_items"]
    assert body["input"][1:1 + len(items)] == items
    assert body["input"][1 + len(items):] == [
        {"type": "function_call_output", "call_id": c.id, "output": "18°C, sunny"} for c in result.tool_calls]


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_is_what_the_sdk_reads_as_the_api_shape(name: str):
    answer = FIXTURES[name]["response"]
    if "events" in answer:
        for event in answer["events"]:
            assert STREAM_EVENT.validate_python(event["data"]).type == event["event"]
    elif answer["status"] == 200:
        Response.model_validate(answer["json"])
    else:
        assert ErrorObject.model_validate(answer["json"]["error"]).message
