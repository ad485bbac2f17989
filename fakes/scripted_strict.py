"""The scripted server's strict mode on the OpenAI chat wire: a request the strictest real
server would refuse is refused here too, with that server's status and error body.

    rule                                          answer, as the server it mirrors sends it
    ------------------------------------------    ----------------------------------------------
    no ``model``                                  OpenAI 400 "you must provide a model parameter"
    ``messages`` missing or empty                 OpenAI 400 (missing_required_parameter) / "[] is
                                                  too short - 'messages'" (OpenAI, Ollama)
    ``tools`` without ``tool_choice``             400 (our rule, not a server's: the agent always
                                                  sends "auto" with tools; see below)
    ``tool_choice`` without ``tools``             vLLM 400 "When using `tool_choice`, `tools` must
                                                  be set." (OpenAI refuses it too)
    a role other than system, developer, user,    OpenAI 400 "Invalid value: 'x'. Supported values
      assistant, tool                             are: ..." (invalid_value)
    a message without ``content``                 llama.cpp 500 "Failed to parse messages: Expected
                                                  'content' ..." (common/chat.cpp)
    ``content: null``                             llama.cpp 500: its Jinja templates index the
                                                  content ("Cannot subscript null at row 23, column
                                                  40: ...", Qwen3, ggml-org/llama.cpp#13178)
    content neither a string nor a list           llama.cpp 500 "Invalid 'content' type"
    a tool call without ``id`` or ``type``        OpenAI 400 (missing_required_parameter)
      "function"
    tool-call ``arguments`` not a string          OpenAI 400 "Invalid type for ... expected a
                                                  string" (invalid_type)
    ``arguments`` not valid JSON                  vLLM 400 with Python's json error, e.g.
                                                  "Expecting ',' delimiter: line 1 column 54 (char
                                                  53)": vLLM parses earlier calls' arguments
                                                  (vllm-project/vllm#43995)
    ``arguments`` JSON but not an object          vLLM 400 from its chat template ("Can only get
                                                  item pairs from a mapping.", a Jinja
                                                  TemplateError answered as BadRequestError)
    a ``tool`` message whose ``tool_call_id``     OpenAI 400 "Invalid parameter: messages with
      answers no call of the assistant message    role 'tool' must be a response to a preceeding
      just before it (tool messages between)      message with 'tool_calls'."

Why tool_choice: llama.cpp's server reads a missing ``tool_choice`` as "auto" in its
source (``json_value(body, "tool_choice", std::string("auto"))``), but servers and proxies
differ, and issue 16 saw tools dropped without it; vLLM reads a missing one as "auto" too,
so sending "auto" changes nothing where it is the default and fixes the others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ROLES = ("system", "developer", "user", "assistant", "tool")
_LLAMA_CPP_NULL_CONTENT = (
    "Cannot subscript null at row 23, column 40:\n"
    "    {%- set start_of_message = message.content[:tool_start_length] %}\n"
    "                                       ^\n"
)


@dataclass(frozen=True)
class Rejection:
    status: int
    body: dict[str, Any]
    rule: str  # what was wrong, where: for the test that reads ``server.rejected``


def check(body: dict[str, Any]) -> Rejection | None:
    """The first rule ``body`` (a chat completions request) breaks, or None."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return _openai(400, "you must provide a model parameter", "model: missing")
    messages = body.get("messages")
    if not isinstance(messages, list):
        return _openai(400, "Missing required parameter: 'messages'.", "messages: missing",
                       param="messages", code="missing_required_parameter")
    if not messages:
        return _openai(400, "[] is too short - 'messages'", "messages: empty", param="messages")
    tools, choice = body.get("tools"), body.get("tool_choice")
    if tools and choice is None:
        return _openai(400, "strict mode: tools were sent without tool_choice (send \"auto\")",
                       "tool_choice: missing with tools", param="tool_choice")
    if not tools and choice not in (None, "none"):
        return _vllm(400, "When using `tool_choice`, `tools` must be set.", "tool_choice: without tools")
    calls_before: set[str] = set()  # ids of the calls the latest assistant message made
    for index, message in enumerate(messages):
        rejection = _message(index, message, calls_before)
        if rejection is not None:
            return rejection
        if message["role"] == "assistant":
            calls_before = {call["id"] for call in message.get("tool_calls") or []}
        elif message["role"] != "tool":
            calls_before = set()
    return None


def _message(index: int, message: Any, calls_before: set[str]) -> Rejection | None:
    where = f"messages[{index}]"
    if not isinstance(message, dict) or "role" not in message:
        return _openai(400, f"Missing required parameter: '{where}.role'.", f"{where}: no role",
                       param=f"{where}.role", code="missing_required_parameter")
    role = message["role"]
    if role not in ROLES:
        supported = ", ".join(f"'{r}'" for r in ROLES[:-1]) + f", and '{ROLES[-1]}'"
        return _openai(400, f"Invalid value: '{role}'. Supported values are: {supported}.",
                       f"{where}.role: unknown role {role!r}", param=f"{where}.role", code="invalid_value")
    if "content" not in message:
        text = f"Failed to parse messages: Expected 'content' (ref: https://github.com/ggml-org/llama.cpp/issues/8367); messages = {json.dumps([message])}"
        return _llama_cpp(500, text, f"{where}.content: missing")
    content = message["content"]
    if content is None:
        return _llama_cpp(500, _LLAMA_CPP_NULL_CONTENT, f"{where}.content: null")
    if not isinstance(content, (str, list)):
        text = f"Invalid 'content' type: expected string or array, got {json.dumps(content)} (ref: https://github.com/ggml-org/llama.cpp/issues/8367)"
        return _llama_cpp(500, text, f"{where}.content: {type(content).__name__}")
    if role == "assistant":
        for position, call in enumerate(message.get("tool_calls") or []):
            rejection = _tool_call(f"{where}.tool_calls[{position}]", call)
            if rejection is not None:
                return rejection
    if role == "tool" and message.get("tool_call_id") not in calls_before:
        text = ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                "with 'tool_calls'.")
        return _openai(400, text, f"{where}: tool_call_id {message.get('tool_call_id')!r} answers no call",
                       param=f"messages.[{index}].role")
    return None


def _tool_call(where: str, call: Any) -> Rejection | None:
    if not isinstance(call, dict) or not call.get("id"):
        return _openai(400, f"Missing required parameter: '{where}.id'.", f"{where}.id: missing",
                       param=f"{where}.id", code="missing_required_parameter")
    function = call.get("function")
    if call.get("type") != "function" or not isinstance(function, dict) or not function.get("name"):
        return _openai(400, f"Missing required parameter: '{where}.type'.", f"{where}: not a function call",
                       param=f"{where}.type", code="missing_required_parameter")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        kind = "an object" if isinstance(arguments, dict) else type(arguments).__name__
        text = f"Invalid type for '{where}.function.arguments': expected a string, but got {kind} instead."
        return _openai(400, text, f"{where}.function.arguments: not a string",
                       param=f"{where}.function.arguments", code="invalid_type")
    try:
        parsed = json.loads(arguments)
    except ValueError as exc:
        return _vllm(400, str(exc), f"{where}.function.arguments: not JSON")
    if not isinstance(parsed, dict):
        return _vllm(400, "Can only get item pairs from a mapping.", f"{where}.function.arguments: not an object")
    return None


def _openai(status: int, message: str, rule: str, *, param: str | None = None, code: str | None = None) -> Rejection:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return Rejection(status, {"error": error}, rule)


def _vllm(status: int, message: str, rule: str) -> Rejection:
    return Rejection(status, {"error": {"message": message, "type": "BadRequestError", "param": None,
                                        "code": status}}, rule)


def _llama_cpp(status: int, message: str, rule: str) -> Rejection:
    return Rejection(status, {"error": {"code": status, "message": message, "type": "server_error"}}, rule)
