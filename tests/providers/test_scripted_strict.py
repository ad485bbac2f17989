"""The scripted server's strict mode (its default) over real HTTP: each request a strict real
server refuses is refused with that server's status and error shape, uses no step, and is
reported by assert_consumed(); the documented valid request passes."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakes.scripted import ScriptedModelServer, text

VALID = json.loads((Path(__file__).parent / "fixtures" / "openai" / "request_tool_round_trip.json").read_text())["body"]
LLAMA_CPP = {"code", "message", "type"}  # llama.cpp's error object (code = the HTTP status)
OPENAI = {"message", "type", "param", "code"}  # OpenAI's (and Ollama's); vLLM's has code = the status


def post(server: ScriptedModelServer, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(server.url + "/chat/completions", json=body, timeout=5.0)


def broken(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    body = copy.deepcopy(VALID)
    change(body)
    return body


def call_of(body: dict[str, Any]) -> dict[str, Any]:
    return body["messages"][2]["tool_calls"][0]


RULES = [  # (what breaks the rule, status, error keys, error type, code, words of the message, rule recorded)
    (lambda b: b.pop("model"), 400, OPENAI, "invalid_request_error", None,
     "you must provide a model parameter", "model: missing"),
    (lambda b: b.update(messages=[]), 400, OPENAI, "invalid_request_error", None,
     "[] is too short - 'messages'", "messages: empty"),
    (lambda b: b.pop("tool_choice"), 400, OPENAI, "invalid_request_error", None,
     "tools were sent without tool_choice", "tool_choice: missing with tools"),
    (lambda b: b.pop("tools"), 400, OPENAI, "BadRequestError", 400,
     "When using `tool_choice`, `tools` must be set.", "tool_choice: without tools"),
    (lambda b: b["messages"][1].update(role="robot"), 400, OPENAI, "invalid_request_error", "invalid_value",
     "Invalid value: 'robot'. Supported values are:", "messages[1].role: unknown role 'robot'"),
    (lambda b: b["messages"][2].update(content=None), 500, LLAMA_CPP, "server_error", 500,
     "Cannot subscript null", "messages[2].content: null"),
    (lambda b: b["messages"][1].pop("content"), 500, LLAMA_CPP, "server_error", 500,
     "Failed to parse messages: Expected 'content'", "messages[1].content: missing"),
    (lambda b: b["messages"][1].update(content=7), 500, LLAMA_CPP, "server_error", 500,
     "Invalid 'content' type", "messages[1].content: int"),
    (lambda b: call_of(b)["function"].update(arguments='{"command": "ls'), 400, OPENAI, "BadRequestError", 400,
     "Unterminated string starting at: line 1 column 13 (char 12)",
     "messages[2].tool_calls[0].function.arguments: not JSON"),
    (lambda b: call_of(b)["function"].update(arguments="[1]"), 400, OPENAI, "BadRequestError", 400,
     "Can only get item pairs from a mapping.", "messages[2].tool_calls[0].function.arguments: not an object"),
    (lambda b: call_of(b)["function"].update(arguments={"command": "ls"}), 400, OPENAI, "invalid_request_error",
     "invalid_type", "expected a string, but got an object instead",
     "messages[2].tool_calls[0].function.arguments: not a string"),
    (lambda b: call_of(b).pop("id"), 400, OPENAI, "invalid_request_error", "missing_required_parameter",
     "Missing required parameter: 'messages[2].tool_calls[0].id'.", "messages[2].tool_calls[0].id: missing"),
    (lambda b: b["messages"][3].update(tool_call_id="call_other"), 400, OPENAI, "invalid_request_error", None,
     "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
     "messages[3]: tool_call_id 'call_other' answers no call"),
    (lambda b: b["messages"].insert(3, {"role": "user", "content": "wait"}), 400, OPENAI, "invalid_request_error",
     None, "must be a response to a preceeding message", "messages[4]: tool_call_id 'call_12345xyz' answers no call"),
]


@pytest.mark.parametrize(("change", "status", "keys", "kind", "code", "words", "rule"), RULES,
                         ids=[r[-1] for r in RULES])
def test_strict_mode_refuses_like_the_server_it_mirrors(change, status, keys, kind, code, words, rule):
    with ScriptedModelServer([text("unused")]) as server:
        response = post(server, broken(change))
        assert response.status_code == status
        error = response.json()["error"]
        assert set(error) == keys and error["type"] == kind and error["code"] == code
        assert words in error["message"]
        assert server.rejected == [rule] and server.hits() == 1
        with pytest.raises(AssertionError, match="requests a strict server refuses"):
            server.assert_consumed()
        assert post(server, VALID).json()["choices"][0]["message"]["content"] == "unused"  # the step was kept


def test_the_documented_request_and_a_plain_chat_pass():
    plain = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tool_choice": "none"}
    with ScriptedModelServer([text("one"), text("two")]) as server:
        assert post(server, VALID).status_code == 200
        assert post(server, plain).status_code == 200
        server.assert_consumed()
    assert server.rejected == []


def test_tool_results_may_follow_in_a_row_for_several_calls():
    body = broken(lambda b: b["messages"][2]["tool_calls"].append(
        {"id": "call_2", "type": "function", "function": {"name": "shell", "arguments": "{}"}}))
    body["messages"].insert(4, {"role": "tool", "tool_call_id": "call_2", "content": "ok"})
    with ScriptedModelServer([text("fine")]) as server:
        assert post(server, body).status_code == 200


def test_without_strict_mode_the_same_request_is_answered():
    with ScriptedModelServer([text("lenient")], strict=False) as server:
        response = post(server, broken(lambda b: b["messages"][2].update(content=None)))
        server.assert_consumed()
    assert response.status_code == 200 and server.rejected == []


def test_strict_mode_leaves_the_anthropic_path_to_its_own_rules():
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    with ScriptedModelServer([text("hello")]) as server:
        response = httpx.post(server.anthropic_url + "/v1/messages", json=body, timeout=5.0)
    assert response.status_code == 200 and server.rejected == []
