"""The Anthropic Messages wire format for our message model: the system prompt as cached
and uncached text blocks, messages with tool_use / tool_result blocks where the API wants
them, and signed thinking blocks carried losslessly as ``ThinkingPart``s.
See ``providers/anthropic.py`` for the mapping rules."""

from __future__ import annotations

from typing import Any, assert_never

from core.messages import ChatMessage, SystemPrompt, ThinkingPart

WIRE = "anthropic"  # ThinkingPart.provider of the parts this wire produces


def thinking_part(block: dict[str, Any]) -> ThinkingPart | None:
    """A ``thinking`` or ``redacted_thinking`` block of a response as a part (None for others)."""
    match block.get("type"):
        case "thinking":
            signature = block.get("signature")
            return ThinkingPart(text=str(block.get("thinking") or ""), provider=WIRE,
                                signature=signature if isinstance(signature, str) else None)
        case "redacted_thinking":
            return ThinkingPart(redacted_data=str(block.get("data") or ""), provider=WIRE)
    return None


def thinking_blocks(parts: list[ThinkingPart]) -> list[dict[str, Any]]:
    """The parts to send back, as the blocks they came from: only Anthropic's own signed or
    redacted parts; unsigned thinking (e.g. from an OpenAI-compatible model) is rejected by
    the API, so it is left out."""
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if part.provider != WIRE:
            continue
        if part.redacted_data is not None:
            blocks.append({"type": "redacted_thinking", "data": part.redacted_data})
        elif part.signature is not None:
            blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
    return blocks


def system_blocks(system: SystemPrompt) -> list[dict[str, Any]]:
    """The system prompt as text blocks: the stable part cached, the dynamic part not."""
    blocks: list[dict[str, Any]] = []
    if system.stable.strip():
        blocks.append({"type": "text", "text": system.stable, "cache_control": {"type": "ephemeral"}})
    if system.dynamic.strip():
        blocks.append({"type": "text", "text": system.dynamic})
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
            blocks = thinking_blocks(message.thinking) + _text_blocks(message.content)
            blocks += [
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                for call in message.tool_calls
            ]
            return "assistant", blocks
        case _:
            assert_never(message.role)


def _text_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}] if text.strip() else []
