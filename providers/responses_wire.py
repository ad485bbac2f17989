"""The OpenAI Responses wire format for our message model: ChatMessages as ``input`` items
(messages, ``function_call``, ``function_call_output``, and ``reasoning`` items put back
together from their ThinkingParts) and output items back as one TurnResult.
See ``providers/responses.py`` for the mapping rules."""

from __future__ import annotations

import json
from typing import Any, assert_never

from core.messages import ChatMessage, ImagePart, ThinkingPart, ToolCallRequest, TurnResult, Usage
from providers.wire import as_count, as_obj, as_str, data_url, image_label, tool_call, with_tool_images

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
                    part = as_obj(part)
                    text.append(as_str(part.get("text")) or as_str(part.get("refusal")) or "")
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
        model=as_str(response.get("model")),
    )


def _reasoning_parts(item: dict[str, Any]) -> list[ThinkingPart]:
    """One part per summary text (the reasoning text itself where a server sends no summary),
    the first carrying the item's encrypted content."""
    texts = [as_str(as_obj(s).get("text")) or "" for s in item.get("summary") or []]
    if not texts:
        texts = ["\n\n".join(as_str(as_obj(c).get("text")) or "" for c in item.get("content") or [])]
    item_id, encrypted = as_str(item.get("id")), as_str(item.get("encrypted_content"))
    return [
        ThinkingPart(text=t, signature=encrypted if i == 0 else None, provider=WIRE, id=item_id)
        for i, t in enumerate(texts)
    ]


def _tool_call(item: dict[str, Any], index: int) -> ToolCallRequest:
    """One function_call item, ``call_<index>`` when it came without an id."""
    call_id = as_str(item.get("call_id")) or as_str(item.get("id")) or f"call_{index}"
    return tool_call(call_id, as_str(item.get("name")) or "", item.get("arguments"))


def _finish_reason(response: dict[str, Any], calls: list[ToolCallRequest]) -> str | None:
    status = as_str(response.get("status"))
    if status == "incomplete":
        reason = as_str(as_obj(response.get("incomplete_details")).get("reason")) or "incomplete"
        return _INCOMPLETE.get(reason, reason)
    if status in (None, "completed"):
        return "tool_calls" if calls else "stop"
    return status


def _usage(raw: Any) -> Usage:
    raw = as_obj(raw)
    details = as_obj(raw.get("input_tokens_details"))
    return Usage(
        input_tokens=as_count(raw.get("input_tokens")),
        output_tokens=as_count(raw.get("output_tokens")),
        cache_read_tokens=as_count(details.get("cached_tokens")),
        cache_write_tokens=as_count(details.get("cache_write_tokens")),
    )


# -- ChatMessage -> input items ----------------------------------------------------


def input_list(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Every message as input items, the images of tool outputs after them: a
    ``function_call_output`` is sent as text here, and a user message takes ``input_image``."""
    return with_tool_images(messages, _input_items, _tool_images_item)


def _tool_images_item(results: list[ChatMessage]) -> dict[str, Any]:
    """The user message item that shows the images of tool outputs, each call named first."""
    content: list[dict[str, Any]] = []
    for result in results:
        content.append({"type": "input_text", "text": image_label(result)})
        content += [_input_image(image) for image in result.images]
    return {"type": "message", "role": "user", "content": content}


def _input_image(image: ImagePart) -> dict[str, Any]:
    """An ``input_image`` part holding the image inline; ``detail`` is "auto", the API's
    default, sent because the typed params require it."""
    return {"type": "input_image", "image_url": data_url(image), "detail": "auto"}


def _input_items(message: ChatMessage) -> list[dict[str, Any]]:
    """One message as input items; a tool message's images are ``input_list``'s business."""
    match message.role:
        case "user":
            if message.images:  # a person's images, or tool results as text (XML path): text, then images
                text = [{"type": "input_text", "text": message.content}] if message.content else []
                return [{"type": "message", "role": "user",
                         "content": text + [_input_image(i) for i in message.images]}]
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
            return _reasoning_items(message.thinking) + said if said else []
        case _:
            assert_never(message.role)


def _reasoning_items(parts: list[ThinkingPart]) -> list[dict[str, Any]]:
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
