"""Prompt caching on the Anthropic wire: breakpoints on the tools, the stable system block
and the latest turns, moving with the conversation, never more than the API's four; and
cached tokens in usage and cost."""

from __future__ import annotations

from typing import Any

import pytest

from core.messages import ChatMessage, LlmRequest, SystemPrompt, ToolCallRequest, ToolSpec, Usage
from fakes.scripted import ScriptedModelServer, text
from fakes.step import Step
from providers.anthropic import AnthropicProvider
from providers.anthropic_wire import count_breakpoints
from providers.model_table import BUILTIN_MODELS, cost_usd
from providers.xml_tools import XmlToolsProvider

CACHED = {"type": "ephemeral"}
TOOLS = [ToolSpec(name=n, description=n, parameters={"type": "object"}) for n in ("shell", "file", "message")]
SYSTEM = SystemPrompt(stable="You are an agent.", dynamic="Workspace: /w")


def request(messages: list[ChatMessage], **overrides: Any) -> LlmRequest:
    return LlmRequest(model="claude-sonnet-4-5", system=SYSTEM, tools=TOOLS, messages=messages, **overrides)


def loop(turns: int) -> list[ChatMessage]:
    """A task ``turns`` tool calls in: the instruction, then call and result pairs."""
    messages = [ChatMessage(role="user", content="do the thing")]
    for n in range(turns):
        messages.append(ChatMessage(role="assistant", content=f"step {n}",
                                    tool_calls=[ToolCallRequest(id=f"t{n}", name="shell", arguments={"n": n})]))
        messages.append(ChatMessage(role="tool", tool_call_id=f"t{n}", name="shell", content=f"out {n}"))
    return messages


def marked(body: dict[str, Any]) -> list[str]:
    """Where the breakpoints are: tools.i, system.i, messages.i.content.j."""
    places = [f"tools.{i}" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    places += [f"system.{i}" for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    places += [f"messages.{i}.content.{j}" for i, m in enumerate(body["messages"])
               for j, b in enumerate(m["content"]) if "cache_control" in b]
    return places


def test_breakpoints_sit_on_the_last_tool_the_stable_system_block_and_the_two_latest_user_messages():
    body = AnthropicProvider("http://x").to_wire(request(loop(3)))
    assert marked(body) == ["tools.2", "system.0", "messages.4.content.0", "messages.6.content.0"]
    assert all(b["cache_control"] == CACHED for b in (body["tools"][2], body["system"][0]))
    assert "cache_control" not in body["system"][1]  # the dynamic part changes per task


def test_breakpoints_move_with_the_conversation_keeping_the_previous_tail():
    provider = AnthropicProvider("http://x")
    before = marked(provider.to_wire(request(loop(2))))
    after = marked(provider.to_wire(request(loop(3))))
    assert before[-2:] == ["messages.2.content.0", "messages.4.content.0"]
    assert after[-2:] == ["messages.4.content.0", "messages.6.content.0"]  # last call's tail is read back


def test_the_latest_user_message_is_marked_on_its_last_block():
    messages = [*loop(1), ChatMessage(role="user", content="<system-reminder>hurry</system-reminder>")]
    body = AnthropicProvider("http://x").to_wire(request(messages))
    last = body["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    assert "cache_control" not in last[0] and last[1]["cache_control"] == CACHED


@pytest.mark.parametrize("turns", [0, 1, 2, 7])
@pytest.mark.parametrize("tools", [TOOLS, []])
@pytest.mark.parametrize("system", [SYSTEM, SystemPrompt(dynamic="only dynamic"), SystemPrompt()])
def test_there_are_never_more_than_four_breakpoints(turns: int, tools: list[ToolSpec], system: SystemPrompt):
    req = request(loop(turns)).model_copy(update={"tools": tools, "system": system})
    body = AnthropicProvider("http://x").to_wire(req)
    xml = XmlToolsProvider(AnthropicProvider("http://x")).to_wire(req)
    assert count_breakpoints(body) <= 4 and count_breakpoints(xml) <= 4
    assert count_breakpoints(body) == bool(tools) + bool(system.stable) + min(2, 1 + turns)


async def test_a_growing_conversation_is_accepted_by_the_strict_server_with_moving_breakpoints():
    steps = [Step(tool_calls=[("shell", {"n": n})], cache=(0, 900) if n == 0 else (900 + 50 * n, 50))
             for n in range(3)] + [text("done")]
    with ScriptedModelServer(steps) as server:
        provider = AnthropicProvider(server.anthropic_url)
        messages = [ChatMessage(role="user", content="do the thing")]
        usages: list[Usage] = []
        for _ in steps:
            result = await provider.complete(request(messages, stream=True))
            usages.append(result.usage)
            messages.append(ChatMessage(role="assistant", tool_calls=result.tool_calls))
            messages += [ChatMessage(role="tool", tool_call_id=c.id, content="ok") for c in result.tool_calls]
        await provider.aclose()
        server.assert_consumed()
    assert [marked(r)[-1] for r in server.requests] == [f"messages.{2 * n}.content.0" for n in range(4)]
    assert [(u.cache_read_tokens, u.cache_write_tokens) for u in usages[:3]] == [(0, 900), (950, 50), (1000, 50)]


def test_cost_prices_cache_reads_and_writes_apart_from_uncached_input():
    usage = AnthropicProvider("http://x").parse_response({
        "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 21, "output_tokens": 40, "cache_creation_input_tokens": 188,
                  "cache_read_input_tokens": 3520},
    }).usage
    assert usage.input_tokens == 21 + 188 + 3520
    # claude-sonnet-4: $3 input, $15 output, $0.30 cache read, $3.75 cache write per million tokens
    expected = (21 * 3.00 + 3520 * 0.30 + 188 * 3.75 + 40 * 15.00) / 1_000_000
    assert cost_usd("claude-sonnet-4-5-20250929", usage, BUILTIN_MODELS) == pytest.approx(expected)
