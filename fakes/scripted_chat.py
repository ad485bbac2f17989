"""The scripted model's answers on the OpenAI Chat Completions wire (fakes/scripted.py).

A ``Step`` as a ``chat.completion`` body, or as ``chat.completion.chunk`` events over SSE
(cut short or broken off by an error event when the step says so), in the shapes and field
order OpenAI sends.
"""

from __future__ import annotations

import json
from typing import Any

from fakes import scripted_anthropic
from fakes.deltas import pieces
from fakes.step import Step


def frames(step: Step, number: int, model: str, include_usage: bool, created: float) -> list[str]:
    """The SSE frames of a chat completion stream, cut or broken off as the step says."""
    sent = chunks(step, number, model, include_usage, created)
    if step.cut_stream or step.stream_error:  # the opening half, without finish_reason, usage or [DONE]
        sent = [c for c in sent if c["choices"] and not c["choices"][0]["finish_reason"]]
        sent = sent[: max(1, len(sent) // 2)]
    events = [f"data: {json.dumps(c)}\n\n" for c in sent]
    if step.stream_error:
        error = error_body(scripted_anthropic.error_text(step.stream_error), step.stream_error)
        events.append(f"data: {json.dumps(error)}\n\n")
    elif not step.cut_stream:
        events.append("data: [DONE]\n\n")
    return events


def error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _calls(step: Step, number: int) -> list[tuple[str, str, str]]:
    """(id, name, arguments text) for each scripted tool call."""
    return [
        (f"call_{number}_{i}", name, args if isinstance(args, str) else json.dumps(args))
        for i, (name, args) in enumerate(step.tool_calls)
    ]


def _usage(step: Step) -> dict[str, Any] | None:
    if not step.report_usage:
        return None
    prompt, completion = step.usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": step.cache[0]},
    }


def _finish(step: Step) -> str:
    return "tool_calls" if step.tool_calls else "stop"


def completion(step: Step, number: int, model: str, created: float) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.text or (None if step.tool_calls else "")}
    if step.reasoning is not None:
        message["reasoning_content"] = step.reasoning
    if step.tool_calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in _calls(step, number)
        ]
    completion = {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion",
        "created": int(created),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(step)}],
        "usage": _usage(step),
        "system_fingerprint": None,
    }
    if not step.report_usage:
        del completion["usage"]
    return completion


def chunks(step: Step, number: int, model: str, include_usage: bool, created: float) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{number}",
            "object": "chat.completion.chunk",
            "created": int(created),
            "model": model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage and step.report_usage:
            out["usage"] = None
        return out

    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    chunks += [chunk({"reasoning_content": piece}) for piece in pieces(step.reasoning or "")]
    chunks += [chunk({"content": piece}) for piece in pieces(step.text, step.text_pieces)]
    for i, (cid, name, args) in enumerate(_calls(step, number)):
        opening = {"index": i, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}
        chunks.append(chunk({"tool_calls": [opening]}))
        chunks += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}) for p in pieces(args)]
    chunks.append(chunk({}, _finish(step)))
    if include_usage and step.report_usage:
        chunks.append({**chunk({}), "choices": [], "usage": _usage(step)})
    return chunks


def content_piece(event: str) -> str | None:
    """The text of an OpenAI content chunk event, if it is one."""
    if not event.startswith("data: {") or "chat.completion.chunk" not in event:
        return None
    choices = json.loads(event.removeprefix("data: ")).get("choices") or [{}]
    content = choices[0].get("delta", {}).get("content")
    return content if isinstance(content, str) else None
