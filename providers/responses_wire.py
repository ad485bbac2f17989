"""The OpenAI Responses wire format for our message model: ChatMessages as ``input`` items
(messages, ``function_call``, ``function_call_output``, and ``reasoning`` items put back
together from their ThinkingParts) and output items back as one TurnResult.
See ``providers/responses.py`` for the mapping rules."""

from __future__ import annotations

import json
from typing import Any, assert_never

from core.messages import ChatMessage, ImagePart, ThinkingPart, ToolCallRequest, TurnResult, Usage

WIRE = "openai_responses"  # ThinkingPart.provider of the parts this wire produces
_INCOMPLETE = {"max_output_tokens": "length"}


# -- output items -> TurnResult ----------------------------------------------------


def turn_result(output: list[dict[str, Any]], response: dict[str, Any]) -> TurnResult:
    text: list[str] = []
    calls: list[ToolCallRequest] = []
    thinking: list[ThinkingPart] = []
    for item in output:
        match item.get("type"):
            case "message":
                for part in item.get("content") or []:
                    part = _obj(part)
                    text.append(_str(part.get("text")) or _str(part.get("refusal")) or "")
            case "function_call":
                calls.append(_tool_call(item, len(calls)))
            case "reasoning":
                thinking += _reasoning_parts(item)
    return TurnResult(
        content="".join(text),
        tool_calls=calls,
        thinking=thinking,
        usage=_usage(response.get("usage")),
        finish_reason=_finish_reason(response, calls),
        model=_str(response.get("model")),
    )


def _reasoning_parts(item: dict[str, Any]) -> list[ThinkingPart]:
    """One part per summary text (the reasoning text itself where a server sends no summary),
    the first carrying the item's encrypted content."""
    texts = [_str(_obj(s).get("text")) or "" for s in item.get("summary") or []]
    if not texts:
        texts = ["\n\n".join(_str(_obj(c).get("text")) or "" for c in item.get("content") or [])]
    item_id, encrypted = _str(item.get("id")), _str(item.get("encrypted_content"))
    return [
        ThinkingPart(text=t, signature=encrypted if i == 0 else None, provider=WIRE, id=item_id)
        for i, t in enumerate(texts)
    ]


def _tool_call(item: dict[str, Any], index: int) -> ToolCallRequest:
    """One function_call item; arguments that are not a JSON object become a parse_error."""
    call_id = _str(item.get("call_id")) or _str(item.get("id")) or f"call_{index}"
    name = _str(item.get("name")) or ""
    raw = item.get("arguments")
    if isinstance(raw, dict):  # some compatible servers send the object itself
        return ToolCallRequest(id=call_id, name=name, arguments=raw)
    raw = raw if isinstance(raw, str) else ""
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


def _finish_reason(response: dict[str, Any], calls: list[ToolCallRequest]) -> str | None:
    status = _str(response.get("status"))
    if status == "incomplete":
        reason = _str(_obj(response.get("incomplete_details")).get("reason")) or "incomplete"
        return _INCOMPLETE.get(reason, reason)
    if status in (None, "completed"):
        return "tool_calls" if calls else "stop"
    return status


def _usage(raw: Any) -> Usage:
    raw = _obj(raw)
    details = _obj(raw.get("input_tokens_details"))

    def count(value: Any) -> int:
        return value if isinstance(value, int) and value > 0 else 0

    return Usage(
        input_tokens=count(raw.get("input_tokens")),
        output_tokens=count(raw.get("output_tokens")),
        cache_read_tokens=count(details.get("cached_tokens")),
        cache_write_tokens=count(details.get("cache_write_tokens")),
    )


# -- ChatMessage -> input items ----------------------------------------------------


def input_list(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Every message as input items; the images of each run of tool messages (the outputs of one
    assistant turn) in one user message item right after the run: a ``function_call_output``
    is sent as text here, and a user message takes ``input_image`` parts."""
    items: list[dict[str, Any]] = []
    shown: list[ChatMessage] = []  # tool messages of the current run that carry images
    for message in messages:
        if message.role != "tool" and shown:
            items.append(tool_images_item(shown))
            shown = []
        items += input_items(message)
        if message.role == "tool" and message.images:
            shown.append(message)
    if shown:
        items.append(tool_images_item(shown))
    return items


def tool_images_item(results: list[ChatMessage]) -> dict[str, Any]:
    """The user message item that shows the images of tool outputs, each call named first."""
    content: list[dict[str, Any]] = []
    for result in results:
        content.append({"type": "input_text", "text": f"Image from tool call {result.tool_call_id} ({result.name}):"})
        content += [input_image(image) for image in result.images]
    return {"type": "message", "role": "user", "content": content}


def input_image(image: ImagePart) -> dict[str, Any]:
    """An ``input_image`` part holding the image inline as a base64 data URL; ``detail`` is
    "auto", the API's default, sent because the typed params require it."""
    return {"type": "input_image", "image_url": f"data:{image.media_type};base64,{image.data}", "detail": "auto"}


def input_items(message: ChatMessage) -> list[dict[str, Any]]:
    """One message as input items; a tool message's images are ``input_list``'s business."""
    match message.role:
        case "user":
            if message.images:  # tool results as text (XML path): the text, then the images
                text = [{"type": "input_text", "text": message.content}] if message.content else []
                return [{"type": "message", "role": "user",
                         "content": text + [input_image(i) for i in message.images]}]
            return [{"type": "message", "role": "user", "content": message.content}]
        case "tool":
            return [{"type": "function_call_output", "call_id": message.tool_call_id or "", "output": message.content}]
        case "assistant":
            said: list[dict[str, Any]] = []
            if message.content.strip():
                said.append({"type": "message", "role": "assistant", "content": message.content})
            said += [
                {"type": "function_call", "call_id": call.id, "name": call.name,
                 "arguments": json.dumps(call.arguments, ensure_ascii=False)}
                for call in message.tool_calls
            ]
            # A reasoning item must be followed by what it led to: none without it.
            return reasoning_items(message.thinking) + said if said else []
        case _:
            assert_never(message.role)


def reasoning_items(parts: list[ThinkingPart]) -> list[dict[str, Any]]:
    """This wire's reasoning parts put back together as the items they came from (parts of
    one item are consecutive and share its id); items without encrypted content are left out."""
    items: list[dict[str, Any]] = []
    for part in parts:
        if part.provider != WIRE or not part.id:
            continue
        if items and items[-1]["id"] == part.id:
            item = items[-1]
        else:
            item = {"type": "reasoning", "id": part.id, "summary": [], "encrypted_content": None}
            items.append(item)
        if part.text:
            item["summary"].append({"type": "summary_text", "text": part.text})
        if part.signature:
            item["encrypted_content"] = part.signature
    return [item for item in items if item["encrypted_content"]]


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
