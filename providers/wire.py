"""What the wire adapters share when they read and write JSON: readers for a server's answer
(which may hold anything where a field is expected), a tool call's JSON arguments parsed
once, token counts, and the images of tool results, which the OpenAI wires send after the
results in one user message (a tool message there takes text only)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from core.messages import ChatMessage, ImagePart, ToolCallRequest


def as_obj(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def as_text(value: Any) -> str:
    """Message content as text: a string, or a list of ``{"type": "text"}`` parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(p.get("text") or "" for p in value if isinstance(p, dict))
    return ""


def as_count(value: Any) -> int:
    """A token count: a positive integer, else 0."""
    return value if isinstance(value, int) and value > 0 else 0


def tool_call(call_id: str, name: str, arguments: Any) -> ToolCallRequest:
    """A call whose arguments came as JSON text (or, from some compatible servers, as the
    object itself); arguments that are not a JSON object become a parse_error."""
    if isinstance(arguments, dict):
        return ToolCallRequest(id=call_id, name=name, arguments=arguments)
    raw = arguments if isinstance(arguments, str) else ""
    if not raw.strip():
        return ToolCallRequest(id=call_id, name=name)
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        error = f"arguments are not valid JSON: {exc}"
    else:
        if isinstance(parsed, dict):
            return ToolCallRequest(id=call_id, name=name, arguments=parsed)
        error = f"arguments must be a JSON object, got {type(parsed).__name__}"
    return ToolCallRequest(id=call_id, name=name, arguments_raw=raw, parse_error=error)


def with_tool_images(
    messages: list[ChatMessage],
    items: Callable[[ChatMessage], list[dict[str, Any]]],
    shown: Callable[[list[ChatMessage]], dict[str, Any]],
) -> list[dict[str, Any]]:
    """Each message's wire ``items``, and right after each run of tool messages (the results
    of one assistant turn) the user message that ``shown`` makes of those with images."""
    wire: list[dict[str, Any]] = []
    run: list[ChatMessage] = []  # tool messages of the current run that carry images
    for message in messages:
        if message.role != "tool" and run:
            wire.append(shown(run))
            run = []
        wire += items(message)
        if message.role == "tool" and message.images:
            run.append(message)
    if run:
        wire.append(shown(run))
    return wire


def image_label(result: ChatMessage) -> str:
    """The text that names the call an image came from, so the model knows which is which."""
    return f"Image from tool call {result.tool_call_id} ({result.name}):"


def data_url(image: ImagePart) -> str:
    """The image inline, as a base64 data URL."""
    return f"data:{image.media_type};base64,{image.data}"
