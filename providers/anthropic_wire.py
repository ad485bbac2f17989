"""The Anthropic Messages wire format for our message model: the system prompt as cached
and uncached text blocks, tools, messages with tool_use / tool_result blocks where the API
wants them, signed thinking blocks carried losslessly as ``ThinkingPart``s, the cache
breakpoints that move with the conversation; and an answer's content blocks back as one
TurnResult. See ``providers/anthropic.py`` for the rules."""

from __future__ import annotations

import json
from typing import Any, assert_never

from core.messages import (
    ChatMessage,
    ImagePart,
    SystemPrompt,
    ThinkingPart,
    ToolCallRequest,
    ToolSpec,
    TurnResult,
    Usage,
)
from providers.arguments import history_arguments
from providers.wire import as_count, as_str

WIRE = "anthropic"  # ThinkingPart.provider of the parts this wire produces
CACHED = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4  # cache_control blocks the API accepts in one request
THINKING_BLOCKS = ("thinking", "redacted_thinking")
_STOP_REASONS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def thinking_part(block: dict[str, Any]) -> ThinkingPart | None:
    """A ``thinking`` or ``redacted_thinking`` block of a response as a part (None for others)."""
    match block.get("type"):
        case "thinking":  # a streamed block opens with "signature": "" and may never get one
            signature = block.get("signature")
            return ThinkingPart(text=str(block.get("thinking") or ""), provider=WIRE,
                                signature=signature if isinstance(signature, str) and signature else None)
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
        blocks.append({"type": "text", "text": system.stable, "cache_control": dict(CACHED)})
    if system.dynamic.strip():
        blocks.append({"type": "text", "text": system.dynamic})
    return blocks


def tools_to_wire(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """The tool definitions, the last one a cache breakpoint: the prefix up to it (tools come
    first in the API's cache order) is the same on every call of a task."""
    wire = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]
    if wire:
        wire[-1]["cache_control"] = dict(CACHED)
    return wire


def mark_latest_turns(messages: list[dict[str, Any]], breakpoints: int) -> None:
    """Put cache breakpoints on the last block of the latest user messages (the newest tool
    results or words), newest first, up to ``breakpoints``: the newest makes the cache write
    the conversation so far, the one before reads what the previous call wrote, even when
    more blocks than the API looks back over were added since."""
    users = [m for m in reversed(messages) if m["role"] == "user" and m["content"]]
    for message in users[: max(0, breakpoints)]:
        message["content"][-1]["cache_control"] = dict(CACHED)


def count_breakpoints(body: dict[str, Any]) -> int:
    """The cache_control marks in a request body (the API allows MAX_BREAKPOINTS), the blocks
    inside a tool_result's content (its text and images) counted too, as the API counts them."""
    blocks = [*body.get("tools", []), *(body.get("system") or [])]
    blocks += [b for m in body.get("messages", []) for b in m["content"]]
    blocks += [inner for b in blocks if isinstance(b, dict) and isinstance(b.get("content"), list)
               for inner in b["content"]]
    return sum(1 for b in blocks if isinstance(b, dict) and "cache_control" in b)


def turn_began_without_thinking(messages: list[dict[str, Any]]) -> bool:
    """Whether the final assistant turn, still in its tool-use loop, began without a thinking
    block. The API wants a whole assistant turn in one mode: a turn is the assistant messages
    after the last user message that holds no tool results, and with thinking on its first
    message must start with a thinking or redacted_thinking block."""
    start = max((i for i, m in enumerate(messages) if m["role"] == "user" and not _has_tool_results(m)), default=-1)
    first = next((m for m in messages[start + 1:] if m["role"] == "assistant"), None)
    return first is not None and (not first["content"] or first["content"][0]["type"] not in THINKING_BLOCKS)


def _has_tool_results(message: dict[str, Any]) -> bool:
    return any(b.get("type") == "tool_result" for b in message["content"] if isinstance(b, dict))


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
        case "user":  # images here are a person's, or tool results' (the XML path): after the text
            return "user", _text_blocks(message.content) + [image_block(i) for i in message.images]
        case "tool":
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id or ""}
            if message.images:  # a list of blocks: the text (if any: an empty one is refused), the images
                result["content"] = _text_blocks(message.content) + [image_block(i) for i in message.images]
            elif message.content:
                result["content"] = message.content
            return "user", [result]
        case "assistant":
            blocks = thinking_blocks(message.thinking) + _text_blocks(message.content)
            blocks += [
                {"type": "tool_use", "id": call.id, "name": call.name, "input": history_arguments(call)}
                for call in message.tool_calls
            ]
            return "assistant", blocks
        case _:
            assert_never(message.role)


def image_block(image: ImagePart) -> dict[str, Any]:
    """An ``image`` block holding the image inline (base64), as the API takes it in user content
    and inside a tool_result's content."""
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}


def _text_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}] if text.strip() else []


# -- content blocks -> TurnResult ---------------------------------------------------


def turn_result(
    blocks: list[dict[str, Any]],
    raw_json: dict[int, str],
    stop_reason: str | None,
    usage: dict[str, Any],
    model: str | None,
) -> TurnResult:
    text: list[str] = []
    calls: list[ToolCallRequest] = []
    thinking: list[ThinkingPart] = []
    for position, block in enumerate(blocks):
        match block.get("type"):
            case "text":
                text.append(as_str(block.get("text")) or "")
            case "thinking" | "redacted_thinking":
                part = thinking_part(block)
                if part is not None:
                    thinking.append(part)
            case "tool_use":
                calls.append(_tool_call(block, raw_json.get(position), len(calls)))
    return TurnResult(
        content="".join(text),
        tool_calls=calls,
        thinking=thinking,
        usage=_usage(usage),
        finish_reason=_STOP_REASONS.get(stop_reason, stop_reason) if stop_reason else None,
        model=model,
    )


def _tool_call(block: dict[str, Any], raw_json: str | None, index: int) -> ToolCallRequest:
    """One tool_use block; input that is not a JSON object becomes a parse_error."""
    call_id = as_str(block.get("id")) or f"toolu_{index}"
    name = as_str(block.get("name")) or ""
    value: Any = block.get("input", {})
    if raw_json is not None and raw_json.strip():  # streamed: the input arrived as JSON text
        try:
            value = json.loads(raw_json)
        except ValueError as exc:
            error = f"tool input is not valid JSON: {exc}"
            return ToolCallRequest(id=call_id, name=name, arguments_raw=raw_json, parse_error=error)
    if isinstance(value, dict):
        return ToolCallRequest(id=call_id, name=name, arguments=value)
    error = f"tool input must be a JSON object, got {type(value).__name__}"
    return ToolCallRequest(id=call_id, name=name, arguments_raw=json.dumps(value), parse_error=error)


def _usage(raw: dict[str, Any]) -> Usage:
    read, write = as_count(raw.get("cache_read_input_tokens")), as_count(raw.get("cache_creation_input_tokens"))
    return Usage(
        input_tokens=as_count(raw.get("input_tokens")) + read + write,
        output_tokens=as_count(raw.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )
