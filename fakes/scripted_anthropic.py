"""Scripted steps rendered on the Anthropic Messages wire, for ``ScriptedModelServer``.

The server in fakes/scripted.py answers ``POST /v1/messages`` with these:

    message(step)      a JSON ``message``: thinking block (``step.reasoning``, signed),
                       text block, ``tool_use`` blocks; ``stop_reason`` and usage
    frames(step)       the same message as named SSE events: message_start, ping,
                       content_block_start/delta/stop per block, message_delta,
                       message_stop; cut short (``cut_stream``) or broken off by an
                       ``event: error`` (``stream_error``) half-way through the deltas
    error_body(...)    an error step's body in Anthropic's ``{"type": "error"}`` shape
    violation(body)    what the real API would reject in a request (None if nothing), with
                       its words; the server answers 400 with it instead of the next step:
                       more than 4 cache_control breakpoints; empty or whitespace-only
                       text blocks; a message with no content (but a final assistant one);
                       a tool_use input that is not an object; tool_result blocks without
                       a matching tool_use in the message before, tool_use blocks without
                       their tool_result in the message after; with thinking enabled, a
                       budget under 1024 or not under max_tokens, a temperature other than
                       1, a tool_choice that forces a tool, a thinking block without its
                       signature, and a final assistant turn (still in its tool-use loop)
                       whose first message does not start with its thinking block;
                       images: an image block anywhere but in user content or inside a
                       tool_result's content, a source other than base64 or an http(s)
                       url, a media_type not one of the four, data that is not base64 or
                       not an image of that type (the bytes are sniffed, as the API does);
                       a tool_result content block of a type it does not take;
                       cache_control marks inside a tool_result count toward the four

Usage: ``Step.usage`` is (prompt, completion) tokens with the cached part of the
prompt in ``Step.cache`` (read, write), so the uncached ``input_tokens`` here is
prompt - read - write and a provider that adds the three back gets the same
prompt count from either wire.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from fakes.deltas import pieces
from fakes.scripted_strict import IMAGE_FORMATS, Rejection, image_format
from fakes.step import Step

MESSAGES_PATH = "/v1/messages"
# The blocks a tool_result's content list may hold (the SDK's ToolResultBlockParam).
TOOL_RESULT_BLOCKS = ("text", "image", "search_result", "document", "tool_reference", "browser_state")

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def overloaded(headers: dict[str, str] | None = None) -> Step:
    """A 529 ``overloaded_error`` step, as Anthropic answers when it is busy."""
    return Step(status=529, error_body=error_body(529, {}), headers=headers or {})


def error_text(error_type: str) -> str:
    return "Overloaded" if error_type == "overloaded_error" else f"scripted {error_type}"


def error_type_for(status: int) -> str:
    return _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def error_body(status: int, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as it is when already Anthropic-shaped, else rebuilt around its message."""
    if body.get("type") == "error":
        return body
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    kind = error_type_for(status)
    return {"type": "error", "error": {"type": kind, "message": message or error_text(kind)}}


def check(body: dict[str, Any]) -> Rejection | None:
    """Strict mode (fakes/scripted_strict.py) on this wire: the API's 400 for a violation."""
    problem = violation(body)
    if problem is None:
        return None
    error = {"type": "error", "error": {"type": "invalid_request_error", "message": problem},
             "request_id": "req_scripted_strict"}
    return Rejection(400, error, problem)


def violation(body: dict[str, Any]) -> str | None:
    """The first thing in a Messages request the real API answers 400 for, in its words."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return "messages: Field required"
    system = body.get("system")
    blocks = [(f"tools.{j}", b) for j, b in enumerate(body.get("tools") or [])]
    blocks += [(f"system.{j}", b) for j, b in enumerate(system)] if isinstance(system, list) else []
    images_allowed = set()  # where an image block may be: user content, a tool_result's content
    for i, message in enumerate(messages):
        content = message.get("content")
        final_assistant = i == len(messages) - 1 and message.get("role") == "assistant"
        if not (content.strip() if isinstance(content, str) else content) and not final_assistant:
            return f"messages.{i}: all messages must have non-empty content except for the optional final assistant message"
        if isinstance(content, list):
            for j, block in enumerate(content):
                where = f"messages.{i}.content.{j}"
                blocks.append((where, block))
                if message.get("role") == "user":
                    images_allowed.add(where)
                inner = block.get("content") if isinstance(block, dict) and block.get("type") == "tool_result" else None
                for k, nested in enumerate(inner if isinstance(inner, list) else []):
                    if isinstance(nested, dict) and nested.get("type") not in TOOL_RESULT_BLOCKS:
                        return (f"{where}.tool_result.content.{k}: Input tag '{nested.get('type')}' found using "
                                "'type' does not match any of the expected tags: "
                                + ", ".join(f"'{t}'" for t in TOOL_RESULT_BLOCKS))
                    blocks.append((f"{where}.tool_result.content.{k}", nested))
                    images_allowed.add(f"{where}.tool_result.content.{k}")
    marks = sum(1 for _, b in blocks if isinstance(b, dict) and "cache_control" in b)
    if marks > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {marks}."
    for where, block in blocks:
        if not isinstance(block, dict):
            return f"{where}: Input should be a valid dictionary"
        if block.get("type") == "image":
            problem = _image_violation(where, block, where in images_allowed)
            if problem:
                return problem
        if block.get("type") == "text" and not str(block.get("text") or "").strip():
            return f"{where}: text content blocks must contain non-whitespace text"
        if block.get("type") == "tool_use" and not isinstance(block.get("input"), dict):
            return f"{where}.tool_use.input: Input should be a valid dictionary"
        if block.get("type") == "thinking" and not block.get("signature"):
            return f"{where}.thinking.signature: Field required"
    for i in range(len(messages)):
        problem = _pairing(messages, i)
        if problem:
            return problem
    return _thinking_violation(body, messages)


def _image_violation(where: str, block: dict[str, Any], allowed: bool) -> str | None:
    """An image block: in user content or a tool_result only; an http(s) url, or base64 data
    that decodes to an image of the media type it names (the API's words)."""
    if not allowed:
        return (f"{where}: Input tag 'image' found using 'type' does not match any of the expected tags "
                "of this message's content")
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if not isinstance(source, dict) or kind not in ("base64", "url"):
        return (f"{where}.image.source: Input tag '{kind}' found using 'type' does not match any of the expected "
                "tags: 'base64', 'url', 'file'")
    if kind == "url":
        url = source.get("url")
        return None if isinstance(url, str) and url.startswith(("http://", "https://")) else (
            f"{where}.image.source.url.url: Only HTTP and HTTPS URLs are supported")
    media_type = source.get("media_type")
    if media_type not in IMAGE_FORMATS:
        return (f"{where}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' "
                "or 'image/webp'")
    data = source.get("data")
    try:
        raw = base64.b64decode(data, validate=True) if isinstance(data, str) and data else b""
    except (binascii.Error, ValueError):
        raw = b""
    if not raw:
        return f"{where}.image.source.base64.data: invalid base64 data"
    found = image_format(raw)
    if found is None:
        return (f"{where}.image.source.base64.data: The image data you provided does not represent a valid image. "
                "Please check your input and try again with one of the supported image formats: "
                "['image/jpeg', 'image/png', 'image/gif', 'image/webp'].")
    if found != media_type:
        return (f"{where}.image.source.base64: The image was specified using the {media_type} media type, "
                f"but the image appears to be a {found} image")
    return None


def _blocks_of(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind] if isinstance(content, list) else []


def _pairing(messages: list[dict[str, Any]], i: int) -> str | None:
    """tool_use ids answered in the next message, tool_result ids asked in the one before."""
    asked = [b.get("id") for b in _blocks_of(messages[i], "tool_use")]
    if asked and i + 1 < len(messages):
        answered = {b.get("tool_use_id") for b in _blocks_of(messages[i + 1], "tool_result")}
        missing = [a for a in asked if a not in answered]
        if missing:
            return (f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(map(str, missing))}. Each `tool_use` block must have a corresponding `tool_result` "
                    "block in the next message.")
    before = {b.get("id") for b in _blocks_of(messages[i - 1], "tool_use")} if i else set()
    for j, block in enumerate(messages[i]["content"] if isinstance(messages[i]["content"], list) else []):
        if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") not in before:
            return (f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                    "block in the previous message.")
    return None


def _thinking_violation(body: dict[str, Any], messages: list[dict[str, Any]]) -> str | None:
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < 1024:
        return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens <= budget:
        return "`max_tokens` must be greater than `thinking.budget_tokens`."
    if body.get("temperature", 1) != 1:
        return "`temperature` may only be set to 1 when thinking is enabled."
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        return "Thinking may not be enabled when tool_choice forces tool use."
    # The final assistant turn: the messages after the last user message without tool results.
    start = max((i for i, m in enumerate(messages)
                 if m.get("role") == "user" and not _blocks_of(m, "tool_result")), default=-1)
    for i in range(start + 1, len(messages)):
        if messages[i].get("role") != "assistant":
            continue
        content = messages[i].get("content")
        first = content[0].get("type") if isinstance(content, list) and content else "text"
        if first not in ("thinking", "redacted_thinking"):
            return (f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. "
                    "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
                    "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you "
                    "include thinking blocks from previous turns. To avoid this requirement, disable `thinking`.")
        break
    return None


def message(step: Step, number: int, model: str) -> dict[str, Any]:
    return {
        "id": f"msg_scripted_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _blocks(step, number),
        "stop_reason": _stop_reason(step),
        "stop_sequence": None,
        "usage": _usage(step),
    }


def events(step: Step, number: int, model: str) -> list[dict[str, Any]]:
    """Every stream event of the step's message, in order."""
    start = {**message(step, number, model), "content": [], "stop_reason": None}
    start["usage"] = {**_usage(step), "output_tokens": 1}
    out: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(_blocks(step, number)):
        out += _block_events(index, block)
    out.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(step), "stop_sequence": None},
            "usage": {"output_tokens": step.usage[1]},
        }
    )
    out.append({"type": "message_stop"})
    return out


def frames(step: Step, number: int, model: str) -> list[str]:
    """The SSE frames the server sends for a streaming request."""
    stream = events(step, number, model)
    if step.cut_stream or step.stream_error:
        deltas = [i for i, e in enumerate(stream) if e["type"] == "content_block_delta"]
        cut = deltas[max(1, len(deltas) // 2) - 1] + 1 if deltas else 1
        stream = stream[:cut]
    out = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in stream]
    if step.stream_error:
        kind = step.stream_error
        error = {"type": "error", "error": {"type": kind, "message": error_text(kind)}}
        out.append(f"event: error\ndata: {json.dumps(error)}\n\n")
    return out


def _blocks(step: Step, number: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if step.reasoning is not None:
        signature = f"scripted-signature-{number}"
        blocks.append({"type": "thinking", "thinking": step.reasoning, "signature": signature})
    if step.text:
        blocks.append({"type": "text", "text": step.text})
    for i, (name, arguments) in enumerate(step.tool_calls):
        if isinstance(arguments, str):  # raw text: sent as parsed JSON if it is, else verbatim
            try:
                arguments = json.loads(arguments)
            except ValueError:
                pass
        call_id = f"toolu_scripted_{number}_{i}"
        blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
    return blocks


def _block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    def delta(d: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": d}

    match block["type"]:
        case "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [delta({"type": "thinking_delta", "thinking": p}) for p in pieces(block["thinking"])]
            deltas.append(delta({"type": "signature_delta", "signature": block["signature"]}))
        case "text":
            opening = {"type": "text", "text": ""}
            deltas = [delta({"type": "text_delta", "text": p}) for p in pieces(block["text"])]
        case _:
            opening = {**block, "input": {}}
            raw = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
            deltas = [delta({"type": "input_json_delta", "partial_json": p}) for p in pieces(raw)]
    start = {"type": "content_block_start", "index": index, "content_block": opening}
    return [start, *deltas, {"type": "content_block_stop", "index": index}]


def _stop_reason(step: Step) -> str:
    return "tool_use" if step.tool_calls else "end_turn"


def _usage(step: Step) -> dict[str, Any]:
    prompt, completion = step.usage
    read, write = step.cache
    return {
        "input_tokens": max(0, prompt - read - write),
        "output_tokens": completion,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
    }
