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
    a content part of a type the role does not   OpenAI 400 "Invalid value: 'x'. Supported values
      take (user: text, image_url, input_audio,   are: ..." (invalid_value)
      file; assistant: text, refusal; system,
      developer, tool: text)
    an ``image_url`` part outside a ``user``      OpenAI 400 "Invalid 'messages[3]'. Image URLs are
      message (a tool result's image, say)        only allowed for messages with role 'user', but
                                                  this message with role 'tool' contains an image
                                                  URL."
    ``image_url`` not an object with a ``url``    OpenAI 400 "Invalid type for '...image_url':
      string                                      expected an object ..." (invalid_type)
    a URL neither http(s) nor a data URL; a       OpenAI 400 "Invalid image URL: '...url'. Expected
      data URL without ``;base64,``, with empty   a base64-encoded data URL with an image MIME type
      or undecodable base64                       (e.g. 'data:image/png;base64,...'), but got ..."
    a data URL of another type than png, jpeg,    OpenAI 400 "You uploaded an unsupported image.
      gif, webp, or whose bytes are none of them  ..." (invalid_image_format)

With ``multimodal=False`` the server is llama.cpp started without a multimodal projector
(``--mmproj``): any ``image_url`` part, in any message, is answered as llama.cpp answers it,
500 ``{"error": {"code": 500, "message": "image input is not supported - hint: if this is
unexpected, you may need to provide the mmproj", "type": "server_error"}}``, before any other
rule. (A 500 is retryable by its status: the providers know these words and fail the call
at once, with a hint, providers/errors.py; and a model not marked ``"vision": true`` is
sent a note instead of its images, providers/model_table.py.)

Why tool_choice: llama.cpp's server reads a missing ``tool_choice`` as "auto" in its
source (``json_value(body, "tool_choice", std::string("auto"))``), but servers and proxies
differ, and issue 16 saw tools dropped without it; vLLM reads a missing one as "auto" too,
so sending "auto" changes nothing where it is the default and fixes the others.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

from core.images import sniff_image_type as image_format  # what the servers look at: the bytes

ROLES = ("system", "developer", "user", "assistant", "tool")
# The content part types each role takes (the OpenAI SDK's typed params).
PART_TYPES = {"user": ("text", "image_url", "input_audio", "file"), "assistant": ("text", "refusal"),
              "system": ("text",), "developer": ("text",), "tool": ("text",)}
NO_MMPROJ = "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj"
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
_DATA_URL = re.compile(r"data:([^;,]*)((?:;[^;,]*)*),(.*)", re.S)
_EXAMPLE_URL = "'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='"
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


def check(body: dict[str, Any], *, multimodal: bool = True) -> Rejection | None:
    """The first rule ``body`` (a chat completions request) breaks, or None; ``multimodal=False``:
    a llama.cpp server without a multimodal projector, refusing every image."""
    if not multimodal:
        rejection = _no_mmproj(body)
        if rejection is not None:
            return rejection
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
    if isinstance(content, list):
        for position, part in enumerate(content):
            rejection = _part(index, role, position, part)
            if rejection is not None:
                return rejection
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


def _no_mmproj(body: dict[str, Any]) -> Rejection | None:
    """llama.cpp without ``--mmproj``: its 500 for the first image part of any message."""
    messages = body.get("messages")
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        content = message.get("content") if isinstance(message, dict) else None
        for position, part in enumerate(content if isinstance(content, list) else []):
            if isinstance(part, dict) and part.get("type") == "image_url":
                return _llama_cpp(500, NO_MMPROJ, f"messages[{index}].content[{position}]: image without mmproj")
    return None


def _part(index: int, role: str, position: int, part: Any) -> Rejection | None:
    """One part of a content array: a type the role takes, and a well-formed image."""
    where = f"messages[{index}].content[{position}]"
    kind = part.get("type") if isinstance(part, dict) else None
    if not isinstance(part, dict) or not isinstance(kind, str):
        return _openai(400, f"Missing required parameter: '{where}.type'.", f"{where}.type: missing",
                       param=f"{where}.type", code="missing_required_parameter")
    if kind == "image_url" and role != "user":
        text = (f"Invalid 'messages[{index}]'. Image URLs are only allowed for messages with role 'user', "
                f"but this message with role '{role}' contains an image URL.")
        return _openai(400, text, f"{where}: image in a message of role {role}", param=f"messages[{index}]",
                       code="invalid_value")
    allowed = PART_TYPES[role]
    if kind not in allowed:
        quoted = [f"'{t}'" for t in allowed]
        supported = quoted[0] if len(quoted) == 1 else (
            ", ".join(quoted[:-1]) + (" and " if len(quoted) == 2 else ", and ") + quoted[-1])
        return _openai(400, f"Invalid value: '{kind}'. Supported values are: {supported}.",
                       f"{where}.type: {kind!r} in a {role} message", param=f"{where}.type", code="invalid_value")
    if kind == "text" and not isinstance(part.get("text"), str):
        return _openai(400, f"Missing required parameter: '{where}.text'.", f"{where}.text: missing",
                       param=f"{where}.text", code="missing_required_parameter")
    if kind == "image_url":
        return _image_url(where, part.get("image_url"))
    return None


def _image_url(where: str, image_url: Any) -> Rejection | None:
    """An ``image_url`` object: an http(s) URL, or a base64 data URL of a png, jpeg, gif or webp
    image whose bytes are one (OpenAI's own checks and words)."""
    where = f"{where}.image_url"
    if not isinstance(image_url, dict) or not isinstance(image_url.get("url"), str):
        got = "a string" if isinstance(image_url, str) else type(image_url).__name__
        text = f"Invalid type for '{where}': expected an object, but got {got} instead."
        return _openai(400, text, f"{where}: not an object with a url", param=where, code="invalid_type")
    url: str = image_url["url"]
    if url.startswith(("http://", "https://")):
        return None
    problem = _data_url_problem(url)
    if problem is not None:
        text = (f"Invalid image URL: '{where}.url'. Expected a base64-encoded data URL with an image MIME type "
                f"(e.g. {_EXAMPLE_URL}), but got {problem}.")
        return _openai(400, text, f"{where}.url: {problem}", param=f"{where}.url", code="invalid_value")
    match = _DATA_URL.fullmatch(url)
    assert match is not None  # _data_url_problem checked it
    data = base64.b64decode(match.group(3))
    if match.group(1) not in IMAGE_FORMATS or image_format(data) is None:
        text = ("You uploaded an unsupported image. Please make sure your image has of one the following "
                "formats: ['png', 'jpeg', 'gif', 'webp'].")
        return _openai(400, text, f"{where}.url: unsupported image", code="invalid_image_format")
    return None


def _data_url_problem(url: str) -> str | None:
    """What is wrong with a data URL as an inline image, in OpenAI's words; None if nothing."""
    match = _DATA_URL.fullmatch(url)
    if not url.startswith("data:") or match is None:
        return "a value without the 'data:' prefix"
    if "base64" not in match.group(2).split(";")[1:]:
        return "a value that is not base64-encoded"
    if not match.group(3):
        return "empty base64-encoded bytes"
    try:
        base64.b64decode(match.group(3), validate=True)
    except (binascii.Error, ValueError):
        return "an invalid base64-encoded value"
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
