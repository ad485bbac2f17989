"""The scripted server is as strict as the Messages API: what the API refuses is answered
400 in Anthropic's error shape, uses no scripted step, and is reported by assert_consumed."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from fakes.scripted import ScriptedModelServer, text

CACHED = {"type": "ephemeral"}
THINKING = {"type": "enabled", "budget_tokens": 2048}
SIGNED = {"type": "thinking", "thinking": "plan", "signature": "sig"}


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def said(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


def use(call_id: str, value: Any = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "shell", "input": {} if value is None else value}


def result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


def body(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "claude-x", "max_tokens": 8192, "messages": list(messages), **fields}


LOOP = (user(said("go")), assistant(SIGNED, use("t1")), user(result("t1")))

REFUSED = {
    "thinking without the turn's thinking block": (
        body(user(said("go")), assistant(use("t1")), user(result("t1")), thinking=THINKING),
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`"),
    "thinking block after the text": (
        body(user(said("go")), assistant(said("hm"), SIGNED, use("t1")), user(result("t1")), thinking=THINKING),
        "but found `text`"),
    "tool result without its tool use": (
        body(user(said("go")), assistant(said("hi")), user(result("t9"))),
        "unexpected `tool_use_id` found in `tool_result` blocks: t9"),
    "tool use never answered": (
        body(user(said("go")), assistant(use("t1")), user(said("and?"))),
        "`tool_use` ids were found without `tool_result` blocks immediately after: t1"),
    "empty text block": (body(user(said(""))), "messages.0.content.0: text content blocks must contain non-whitespace"),
    "whitespace system block": (body(user(said("hi")), system=[said("  \n")]), "system.0: text content blocks"),
    "empty user message": (body(user(), assistant(said("x"))), "messages.0: all messages must have non-empty content"),
    "five breakpoints": (
        body(user({**said("a"), "cache_control": CACHED}, {**said("b"), "cache_control": CACHED}),
             system=[{**said("s"), "cache_control": CACHED}, {**said("t"), "cache_control": CACHED}],
             tools=[{"name": "shell", "input_schema": {"type": "object"}, "cache_control": CACHED}]),
        "A maximum of 4 blocks with cache_control may be provided. Found 5."),
    "tool input not an object": (
        body(user(said("go")), assistant(use("t1", "ls")), user(result("t1"))),
        "messages.1.content.0.tool_use.input: Input should be a valid dictionary"),
    "thinking block without signature": (
        body(user(said("go")), assistant({"type": "thinking", "thinking": "plan"}, use("t1")), user(result("t1")),
             thinking=THINKING),
        "messages.1.content.0.thinking.signature: Field required"),
    "budget under 1024": (body(*LOOP, thinking={"type": "enabled", "budget_tokens": 512}), "greater than or equal to 1024"),
    "max_tokens not above the budget": (body(*LOOP, thinking=THINKING, max_tokens=2048),
                                        "`max_tokens` must be greater than `thinking.budget_tokens`"),
    "temperature with thinking": (body(*LOOP, thinking=THINKING, temperature=0.5), "`temperature` may only be set to 1"),
    "forced tool with thinking": (body(*LOOP, thinking=THINKING, tool_choice={"type": "any"}),
                                  "Thinking may not be enabled when tool_choice forces tool use."),
}

ACCEPTED = {
    "a tool loop with its thinking": body(*LOOP, thinking=THINKING),
    "later calls of the turn without thinking": body(*LOOP, assistant(use("t2")), user(result("t2")),
                                                     thinking=THINKING),
    "a new turn after a loop begun without thinking": body(
        user(said("go")), assistant(use("t1")), user(result("t1")), assistant(said("done")), user(said("more")),
        thinking=THINKING),
    "redacted thinking opening the turn": body(user(said("go")), assistant(
        {"type": "redacted_thinking", "data": "EmwK"}, use("t1")), user(result("t1")), thinking=THINKING),
    "four breakpoints": body(user({**said("a"), "cache_control": CACHED}, {**said("b"), "cache_control": CACHED}),
                             system=[{**said("s"), "cache_control": CACHED}],
                             tools=[{"name": "shell", "input_schema": {"type": "object"}, "cache_control": CACHED}]),
    "an empty final assistant message (prefill)": body(user(said("hi")), assistant()),
}


def post(server: ScriptedModelServer, payload: dict[str, Any]) -> httpx.Response:
    return httpx.post(server.anthropic_url + "/v1/messages", json=payload, timeout=5.0)


@pytest.mark.parametrize("case", REFUSED)
def test_strict_server_refuses_what_the_api_refuses(case: str):
    payload, words = REFUSED[case]
    with ScriptedModelServer([text("unused")]) as server:
        answer = post(server, payload)
        assert answer.status_code == 400
        error = answer.json()
        assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
        assert words in error["error"]["message"]
        assert server.rejected == [error["error"]["message"]]
        with pytest.raises(AssertionError, match="requests a strict server refuses"):
            server.assert_consumed()


@pytest.mark.parametrize("case", ACCEPTED)
def test_strict_server_accepts_what_the_api_accepts(case: str):
    with ScriptedModelServer([text("fine")]) as server:
        answer = post(server, ACCEPTED[case])
        server.assert_consumed()
    assert answer.status_code == 200 and answer.json()["content"] == [said("fine")]


def test_strict_mode_can_be_turned_off():
    payload, _ = REFUSED["tool input not an object"]
    with ScriptedModelServer([text("lenient")], strict=False) as server:
        answer = post(server, payload)
        server.assert_consumed()
    assert answer.status_code == 200
