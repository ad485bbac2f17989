"""Scripted steps rendered on the Anthropic Messages wire, for ``ScriptedModelServer``.

The server in fakes/scripted.py answers ``POST /v1/messages`` with these:

    message(step)      a JSON ``message``: thinking block (``step.reasoning``, signed),
                       text block, ``tool_use`` blocks; ``stop_reason`` and usage
    frames(step)       the same message as named SSE events: message_start, ping,
                       content_block_start/delta/stop per block, message_delta,
                       message_stop; cut short (``cut_stream``) or broken off by an
                       ``event: error`` (``stream_error``) half-way through the deltas
    error_body(...)    an error step's body in Anthropic's ``{"type": "error"}`` shape

Usage: ``Step.usage`` is (prompt, completion) tokens with the cached part of the
prompt in ``Step.cache`` (read, write), so the uncached ``input_tokens`` here is
prompt - read - write and a provider that adds the three back gets the same
prompt count from either wire.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fakes.scripted import Step

MESSAGES_PATH = "/v1/messages"

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
    from fakes.scripted import Step

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
            deltas = [delta({"type": "thinking_delta", "thinking": p}) for p in _pieces(block["thinking"])]
            deltas.append(delta({"type": "signature_delta", "signature": block["signature"]}))
        case "text":
            opening = {"type": "text", "text": ""}
            deltas = [delta({"type": "text_delta", "text": p}) for p in _pieces(block["text"])]
        case _:
            opening = {**block, "input": {}}
            raw = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
            deltas = [delta({"type": "input_json_delta", "partial_json": p}) for p in _pieces(raw)]
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


def _pieces(value: str, parts: int = 3) -> list[str]:
    """Split text into up to ``parts`` consecutive non-empty pieces."""
    if not value:
        return []
    size = -(-len(value) // parts)
    return [value[i : i + size] for i in range(0, len(value), size)]
