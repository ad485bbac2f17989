"""The Anthropic Messages wire format for our message model: the system prompt as cached
and uncached text blocks, messages with tool_use / tool_result blocks where the API wants
them, and signed thinking blocks carried losslessly through ``ChatMessage.thinking``.
See ``providers/anthropic.py`` for the mapping rules."""

from __future__ import annotations

import json
from typing import Any, assert_never

from prompts import split_at_cache_boundary
from core.messages import ChatMessage

THINKING_MARKER = "anthropic-thinking-v1:"


def encode_thinking(blocks: list[dict[str, Any]]) -> str | None:
    """Signed thinking blocks as one JSON-safe string for ``ChatMessage.thinking``."""
    return THINKING_MARKER + json.dumps(blocks, ensure_ascii=False) if blocks else None


def decode_thinking(thinking: str | None) -> list[dict[str, Any]]:
    """The blocks inside an ``encode_thinking`` string; [] for anything else."""
    if not thinking or not thinking.startswith(THINKING_MARKER):
        return []
    try:
        blocks = json.loads(thinking[len(THINKING_MARKER):])
    except ValueError:
        return []
    if not isinstance(blocks, list):
        return []
    return [b for b in blocks if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")]


def thinking_text(thinking: str | None) -> str:
    """Readable thinking: the text of encoded blocks, or the plain string as it is."""
    if not thinking or not thinking.startswith(THINKING_MARKER):
        return thinking or ""
    parts = [
        b["thinking"] if b["type"] == "thinking" else "[redacted thinking]"
        for b in decode_thinking(thinking)
    ]
    return "\n\n".join(p for p in parts if isinstance(p, str) and p)


def system_blocks(system: str) -> list[dict[str, Any]]:
    """The system prompt as text blocks: the stable prefix cached, the dynamic suffix not."""
    stable, dynamic = split_at_cache_boundary(system)
    blocks: list[dict[str, Any]] = []
    if stable.strip():
        blocks.append({"type": "text", "text": stable, "cache_control": {"type": "ephemeral"}})
    if dynamic.strip():
        blocks.append({"type": "text", "text": dynamic})
    return blocks


def messages_to_wire(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Messages with same-role neighbours merged and tool results first in user content."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        role, blocks = _message_blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    for message in wire:
        if message["role"] == "user":
            content = message["content"]
            message["content"] = [b for b in content if b["type"] == "tool_result"] + [
                b for b in content if b["type"] != "tool_result"
            ]
    return wire


def _message_blocks(message: ChatMessage) -> tuple[str, list[dict[str, Any]]]:
    match message.role:
        case "user":
            return "user", _text_blocks(message.content)
        case "tool":
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id or ""}
            if message.content:
                result["content"] = message.content
            return "user", [result]
        case "assistant":
            blocks = decode_thinking(message.thinking) + _text_blocks(message.content)
            blocks += [
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                for call in message.tool_calls
            ]
            return "assistant", blocks
        case _:
            assert_never(message.role)


def _text_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}] if text.strip() else []
