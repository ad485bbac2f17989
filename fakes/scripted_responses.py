"""Scripted steps rendered on the OpenAI Responses wire, for ``ScriptedModelServer``.

The server in fakes/scripted.py answers ``POST /v1/responses`` with these:

    response(step, ...)   a JSON ``response``: a ``reasoning`` item (``step.reasoning`` as
                          its summary, with ``encrypted_content`` when the request asked
                          for ``reasoning.encrypted_content``), a ``message`` item, one
                          ``function_call`` item per call; status and usage
    frames(step, ...)     the same response as typed SSE events: response.created,
                          response.in_progress, per item output_item.added, its deltas
                          (reasoning_summary_text, output_text, function_call_arguments)
                          and output_item.done, then response.completed; cut short
                          (``cut_stream``) or broken off by an ``error`` event
                          (``stream_error``) half-way through the deltas
    violation(body)       what the real API would reject in a request (None if nothing),
                          in its words; the server answers 400 with it instead of the next
                          step: a ``function_call_output`` with no ``function_call`` of
                          its ``call_id`` before it, a ``function_call`` never answered, a
                          ``reasoning`` item without the encrypted content this server
                          issued for it (``store: false`` keeps nothing) or without an
                          item after it, ``max_output_tokens`` under 16; in a message's
                          content, a part its role does not take (``input_image`` only in
                          user, system and developer messages), an ``input_image`` whose
                          ``image_url`` is neither http(s) nor a base64 data URL of a png,
                          jpeg, gif or webp image, or whose ``detail`` is unknown

Error steps answer in OpenAI's ``{"error": {...}}`` shape (the chat wire's, in scripted.py).
Usage: ``Step.usage`` is (input, output) tokens with the cached part in ``Step.cache``
(read, write), all of them counted in ``input_tokens`` as the API does; none with
``report_usage=False``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from typing import Any

from fakes.deltas import pieces
from fakes.scripted_strict import IMAGE_FORMATS, Rejection, image_format
from fakes.step import Step

RESPONSES_PATH = "/v1/responses"
ENCRYPTED_REASONING = "reasoning.encrypted_content"
# The content part types a message item of each role takes.
_PART_TYPES = {"user": ("input_text", "input_image", "input_file"),
               "system": ("input_text", "input_image", "input_file"),
               "developer": ("input_text", "input_image", "input_file"),
               "assistant": ("output_text", "refusal")}
_DETAILS = ("low", "high", "auto", "original")
_DATA_URL = re.compile(r"data:([^;,]*);base64,(.*)", re.S)
_ERROR_CODES = {"rate_limit_error": "rate_limit_exceeded", "overloaded_error": "server_error", "api_error": "server_error"}


def encrypted(number: int) -> str:
    """The encrypted reasoning this server issues with response ``number``."""
    return f"gAAAAB-scripted-reasoning-{number}"


def response(step: Step, number: int, model: str, request: dict[str, Any]) -> dict[str, Any]:
    usage = _usage(step) if step.report_usage else None
    return _response(number, model, request, _items(step, number, request), "completed", usage)


def events(step: Step, number: int, model: str, request: dict[str, Any]) -> list[dict[str, Any]]:
    """Every stream event of the step's response, in order, numbered."""
    opening = _response(number, model, request, [], "in_progress", None)
    out: list[dict[str, Any]] = [{"type": "response.created", "response": opening},
                                 {"type": "response.in_progress", "response": opening}]
    for index, item in enumerate(_items(step, number, request)):
        out += _item_events(index, item)
    out.append({"type": "response.completed", "response": response(step, number, model, request)})
    return [{**event, "sequence_number": n} for n, event in enumerate(out)]


def frames(step: Step, number: int, model: str, request: dict[str, Any]) -> list[str]:
    """The SSE frames the server sends for a streaming request."""
    stream = events(step, number, model, request)
    if step.cut_stream or step.stream_error:
        deltas = [i for i, e in enumerate(stream) if e["type"].endswith(".delta")]
        stream = stream[: deltas[max(1, len(deltas) // 2) - 1] + 1 if deltas else 2]
    if step.stream_error:
        kind = step.stream_error
        stream.append({"type": "error", "code": _ERROR_CODES.get(kind, kind), "message": f"scripted {kind}",
                       "param": None, "sequence_number": len(stream)})
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in stream]


def check(body: dict[str, Any]) -> Rejection | None:
    """Strict mode (fakes/scripted_strict.py) on this wire: OpenAI's 400 for a violation."""
    problem = violation(body)
    if problem is None:
        return None
    error = {"error": {"message": problem, "type": "invalid_request_error", "param": "input", "code": None}}
    return Rejection(400, error, problem)


def violation(body: dict[str, Any]) -> str | None:
    """The first thing in a Responses request the real API answers 400 for, in its words."""
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        return "Invalid type for 'input': expected a string or an array of input items."
    limit = body.get("max_output_tokens")
    if isinstance(limit, int) and limit < 16:
        return f"Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got {limit} instead."
    calls: set[str] = set()
    answered = {i.get("call_id") for i in items if i.get("type") == "function_call_output"}
    for index, item in enumerate(items):
        kind = item.get("type")
        if kind == "function_call":
            if item.get("call_id") not in answered and index < len(items) - 1:
                return f"No tool output found for function call {item.get('call_id')}."
            calls.add(str(item.get("call_id")))
        elif kind == "function_call_output" and item.get("call_id") not in calls:
            return f"No tool call found for function call output with call_id {item.get('call_id')}."
        elif kind == "reasoning":
            problem = _reasoning_violation(items, index)
            if problem:
                return problem
        elif kind in (None, "message") and isinstance(item.get("content"), list):
            problem = _content_violation(index, item)
            if problem:
                return problem
    return None


def _content_violation(index: int, item: dict[str, Any]) -> str | None:
    """A message item's content parts: types its role takes, well-formed images."""
    allowed = _PART_TYPES.get(str(item.get("role")), ())
    for position, part in enumerate(item["content"]):
        where = f"input[{index}].content[{position}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in allowed:
            supported = ", ".join(f"'{t}'" for t in allowed)
            return f"Invalid value: '{kind}'. Supported values are: {supported}. (at '{where}.type')"
        if kind == "input_image":
            problem = _input_image_violation(where, part)
            if problem:
                return problem
    return None


def _input_image_violation(where: str, part: dict[str, Any]) -> str | None:
    detail = part.get("detail", "auto")
    if detail not in _DETAILS:
        return f"Invalid value: '{detail}'. Supported values are: 'low', 'high', 'auto', and 'original'. (at '{where}.detail')"
    url = part.get("image_url")
    if url is None and part.get("file_id"):
        return None
    if not isinstance(url, str):
        return f"Invalid type for '{where}.image_url': expected a string, but got {type(url).__name__} instead."
    if url.startswith(("http://", "https://")):
        return None
    expected = (f"Invalid '{where}.image_url'. Expected a base64-encoded data URL with an image MIME type "
                "(e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got ")
    match = _DATA_URL.fullmatch(url)
    if match is None:
        return expected + "a value without the 'data:' prefix."
    if not match.group(2):
        return expected + "empty base64-encoded bytes."
    try:
        data = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return expected + "an invalid base64-encoded value."
    if match.group(1) not in IMAGE_FORMATS or image_format(data) is None:
        return ("You uploaded an unsupported image. Please make sure your image has of one the following formats: "
                "['png', 'jpeg', 'gif', 'webp'].")
    return None


def _reasoning_violation(items: list[dict[str, Any]], index: int) -> str | None:
    item = items[index]
    item_id = str(item.get("id"))
    number = item_id.removeprefix("rs_scripted_")
    if not item.get("encrypted_content"):
        return (f"Item with id '{item_id}' not found. Items are not persisted when `store` is set to false. "
                "Try again with `store` set to true, or remove this item from your input.")
    if not number.isdigit() or item["encrypted_content"] != encrypted(int(number)):
        return f"The encrypted content for item {item_id} could not be verified."
    following = next((i for i in items[index + 1:] if i.get("type") != "reasoning"), None)
    if following is None or not (following.get("type") == "function_call" or following.get("role") == "assistant"):
        return f"Item '{item_id}' of type 'reasoning' was provided without its required following item."
    return None


# -- rendering ---------------------------------------------------------------------


def _response(number: int, model: str, request: dict[str, Any], output: list[dict[str, Any]], status: str,
              usage: dict[str, Any] | None) -> dict[str, Any]:
    tools = [
        {"type": "function", "name": t.get("name", ""), "description": t.get("description"),
         "parameters": t.get("parameters"), "strict": t.get("strict")}
        for t in request.get("tools") or [] if isinstance(t, dict)
    ]
    return {
        "id": f"resp_scripted_{number}",
        "object": "response",
        "created_at": time.time(),
        "status": status,
        "model": model,
        "output": output,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "parallel_tool_calls": True,
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": tools,
        "usage": usage,
    }


def _items(step: Step, number: int, request: dict[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if step.reasoning is not None:
        wants = ENCRYPTED_REASONING in (request.get("include") or [])
        items.append({"id": f"rs_scripted_{number}", "type": "reasoning",
                      "summary": [{"type": "summary_text", "text": step.reasoning}] if step.reasoning else [],
                      "encrypted_content": encrypted(number) if wants else None})
    if step.text or not step.tool_calls:
        items.append({"id": f"msg_scripted_{number}", "type": "message", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": step.text, "annotations": []}]})
    for i, (name, arguments) in enumerate(step.tool_calls):
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        items.append({"id": f"fc_scripted_{number}_{i}", "type": "function_call", "call_id": f"call_{number}_{i}",
                      "name": name, "arguments": raw, "status": "completed"})
    return items


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    at = {"item_id": item["id"], "output_index": index}
    match item["type"]:
        case "reasoning":
            opening = {**item, "summary": [], "encrypted_content": None}
            texts = [s["text"] for s in item["summary"]]
            deltas = [{"type": "response.reasoning_summary_text.delta", **at, "summary_index": 0, "delta": p}
                      for p in pieces("".join(texts))]
        case "message":
            opening = {**item, "status": "in_progress", "content": []}
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            deltas = [{"type": "response.content_part.added", **at, "content_index": 0, "part": part}]
            deltas += [{"type": "response.output_text.delta", **at, "content_index": 0, "delta": p, "logprobs": []}
                       for p in pieces(text)]
            deltas.append({"type": "response.output_text.done", **at, "content_index": 0, "text": text,
                           "logprobs": []})
        case _:
            opening = {**item, "status": "in_progress", "arguments": ""}
            deltas = [{"type": "response.function_call_arguments.delta", **at, "delta": p}
                      for p in pieces(item["arguments"])]
            deltas.append({"type": "response.function_call_arguments.done", **at, "arguments": item["arguments"]})
    return [
        {"type": "response.output_item.added", "output_index": index, "item": opening},
        *deltas,
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]


def _usage(step: Step) -> dict[str, Any]:
    prompt, completion = step.usage
    read, write = step.cache
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": read, "cache_write_tokens": write},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }
