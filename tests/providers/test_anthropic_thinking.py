"""Extended thinking on the Anthropic wire: the request, the whole-turn rule, and signed
thinking carried back across a tool-use loop against the strict scripted server."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming, MessageCreateParamsStreaming

from core.messages import ChatMessage, LlmRequest, ThinkingPart, ToolCallRequest, ToolSpec
from fakes.scripted import ScriptedModelServer, text
from fakes.step import Step
from providers.anthropic import AnthropicProvider
from tests.providers.test_oracles import violations

SHELL = ToolSpec(name="shell", description="Run a command", parameters={"type": "object", "properties": {}})
SIGNED = ThinkingPart(text="I should list the files.", signature="sig-1", provider="anthropic")


def request(**overrides: Any) -> LlmRequest:
    fields: dict[str, Any] = {"model": "claude-sonnet-4-5", "system": "Be terse.", "tools": [SHELL],
                              "messages": [ChatMessage(role="user", content="list the files")]}
    return LlmRequest(**{**fields, **overrides})


def wire(**overrides: Any) -> dict[str, Any]:
    return AnthropicProvider("http://claude.test").to_wire(request(**overrides))


def call(call_id: str, thinking: list[ThinkingPart] | None = None) -> list[ChatMessage]:
    """An assistant message calling the shell, and the tool's answer."""
    said = ChatMessage(role="assistant", tool_calls=[ToolCallRequest(id=call_id, name="shell", arguments={})],
                       thinking=thinking or [])
    return [said, ChatMessage(role="tool", tool_call_id=call_id, name="shell", content="a.txt")]


@pytest.mark.parametrize(
    ("budget", "max_tokens", "sent_budget", "sent_max_tokens"),
    [
        (2048, None, 2048, 8192),  # the default max_tokens leaves room for an answer
        (16_000, None, 16_000, 20_096),  # the default raised to budget + ANSWER_ROOM
        (16_000, 32_000, 16_000, 32_000),  # the caller's max_tokens leaves room: both kept
        (16_000, 8192, 4096, 8192),  # the caller's max_tokens (the model's longest reply) stays: the budget fits
        (500, 4000, 1024, 4000),  # under the API's minimum: raised to it
    ],
)
def test_thinking_budget_enables_thinking_with_max_tokens_above_the_budget(
    budget: int, max_tokens: int | None, sent_budget: int, sent_max_tokens: int
):
    body = wire(thinking_budget=budget, max_tokens=max_tokens)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": sent_budget}
    assert body["max_tokens"] == sent_max_tokens > sent_budget >= 1024


def test_thinking_is_off_for_a_call_whose_max_tokens_leaves_no_room_for_the_minimum_budget():
    body = wire(thinking_budget=4096, max_tokens=2000, temperature=0.2)
    assert "thinking" not in body and (body["max_tokens"], body["temperature"]) == (2000, 0.2)


def test_thinking_leaves_out_temperature_and_never_forces_a_tool():
    body = wire(thinking_budget=2048, temperature=0.2)
    assert "temperature" not in body and "tool_choice" not in body
    assert wire(temperature=0.2)["temperature"] == 0.2  # without thinking it is sent


def test_no_budget_sends_no_thinking():
    assert "thinking" not in wire()
    assert "thinking" not in wire(thinking_budget=None)


def test_a_tool_loop_that_began_with_thinking_keeps_it_though_later_calls_have_none():
    history = [ChatMessage(role="user", content="go"), *call("t1", [SIGNED]), *call("t2")]
    body = wire(messages=history, thinking_budget=2048)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["messages"][1]["content"][0] == {"type": "thinking", "thinking": SIGNED.text, "signature": "sig-1"}
    assert body["messages"][3]["content"][0]["type"] == "tool_use"


@pytest.mark.parametrize(
    "thinking",
    [
        [],  # begun before the budget was set
        [ThinkingPart(text="reasoning_content of another model", provider="openai")],  # before a failover
        [ThinkingPart(text="streamed without its signature", provider="anthropic")],
    ],
)
def test_a_tool_loop_that_began_without_thinking_finishes_without_it(thinking: list[ThinkingPart]):
    history = [ChatMessage(role="user", content="go"), *call("t1", thinking)]
    body = wire(messages=history, thinking_budget=2048, temperature=0.3)
    assert "thinking" not in body and body["temperature"] == 0.3
    assert body["messages"][1]["content"][0]["type"] == "tool_use"


def test_the_next_turn_thinks_again_after_a_loop_without_thinking():
    history = [ChatMessage(role="user", content="go"), *call("t1"), ChatMessage(role="assistant", content="Done."),
               ChatMessage(role="user", content="now count them")]
    assert wire(messages=history, thinking_budget=2048)["thinking"]["budget_tokens"] == 2048


@pytest.mark.parametrize("stream", [False, True])
def test_thinking_request_bodies_conform_to_the_sdk_params(stream: bool):
    history = [ChatMessage(role="user", content="go"), *call("t1", [SIGNED, ThinkingPart(
        redacted_data="EmwKAhgB", provider="anthropic")])]
    body = wire(messages=history, thinking_budget=4096, stream=stream)
    assert "thinking" in body
    assert violations(body, MessageCreateParamsStreaming if stream else MessageCreateParamsNonStreaming) == []


@pytest.mark.parametrize("stream", [False, True], ids=["json", "streamed"])
async def test_thinking_is_carried_back_across_a_tool_loop_the_strict_server_accepts(stream: bool):
    steps = [
        Step(reasoning="List first, then count.", text="Listing.", tool_calls=[("shell", {"command": "ls"})]),
        Step(tool_calls=[("shell", {"command": "ls | wc -l"})]),  # later calls of the turn think no more
        text("There are 2 files."),
    ]
    with ScriptedModelServer(steps) as server:
        provider = AnthropicProvider(server.anthropic_url)
        messages = [ChatMessage(role="user", content="how many files?")]
        for _ in steps:
            result = await provider.complete(request(messages=messages, thinking_budget=2048, stream=stream))
            messages.append(ChatMessage(role="assistant", content=result.content, tool_calls=result.tool_calls,
                                        thinking=result.thinking))
            messages += [ChatMessage(role="tool", tool_call_id=c.id, content="a\nb") for c in result.tool_calls]
        await provider.aclose()
        server.assert_consumed()  # strict: none was refused
    assert [r["thinking"] for r in server.requests] == [{"type": "enabled", "budget_tokens": 2048}] * 3
    first_answer = server.requests[2]["messages"][1]["content"]
    assert [b["type"] for b in first_answer] == ["thinking", "text", "tool_use"]
    assert first_answer[0] == {"type": "thinking", "thinking": "List first, then count.",
                               "signature": "scripted-signature-1"}
    assert result.content == "There are 2 files."
