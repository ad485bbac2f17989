"""Token counts for a call whose server reported none, so cost limits still see it.

Some OpenAI-compatible servers send no usage; their calls would count as 0 tokens and a
cost limit would never trigger. ``with_estimate`` fills in what the server left out and
marks the usage ``estimated``: characters / 4, rounded up, slightly high for JSON-heavy
text, which errs on the safe side (a real tokenizer would need files downloaded at run
time, and local models use their own). Images count as ``IMAGE_TOKENS`` each.
"""

from __future__ import annotations

import json
from typing import Any

from core.messages import ToolCallRequest, TurnResult, Usage

CHARS_PER_TOKEN = 4
# What one image costs, at most, as the vendors count it: Anthropic about width*height/750
# after scaling to about 1.15 megapixels (1,600), OpenAI's high detail 85 + 170 per 512-pixel
# tile (1,105 at most for gpt-4o). Used for estimates and for the room images take in the window.
IMAGE_TOKENS = 1600
_IMAGE_STAND_IN = "i" * (IMAGE_TOKENS * CHARS_PER_TOKEN)


def estimate_tokens(text: str) -> int:
    """Characters / 4, rounded up (0 for no text)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def request_text(body: Any) -> str:
    """A request body as the text an estimate counts: each inline image (a ``data:image/`` URL,
    an Anthropic base64 source) as ``IMAGE_TOKENS`` tokens' worth of characters, not as its
    base64, which would count a 1 MB screenshot as some 350,000 tokens."""
    return json.dumps(_images_as_stand_ins(body), ensure_ascii=False, separators=(",", ":"))


def _images_as_stand_ins(value: Any) -> Any:
    if isinstance(value, str):
        return _IMAGE_STAND_IN if value.startswith("data:image/") else value
    if isinstance(value, list):
        return [_images_as_stand_ins(item) for item in value]
    if isinstance(value, dict):
        if value.get("type") == "base64" and isinstance(value.get("data"), str):
            return {**value, "data": _IMAGE_STAND_IN}
        return {key: _images_as_stand_ins(item) for key, item in value.items()}
    return value


def estimate_usage(request_body_text: str, reply_text: str) -> Usage:
    """Both counts estimated: input from the request body as sent, output from the reply."""
    return Usage(input_tokens=estimate_tokens(request_body_text), output_tokens=estimate_tokens(reply_text),
                 estimated=True)


def reply_text(result: TurnResult) -> str:
    """What the model generated, as text: its reasoning, its text and its tool calls."""
    calls = "".join(call.name + _arguments_text(call) for call in result.tool_calls)
    return "".join(part.text for part in result.thinking) + result.content + calls


def with_estimate(result: TurnResult, request_body_text: str) -> TurnResult:
    """``result`` with each count the server did not report (0) estimated; unchanged when it
    reported both."""
    usage = result.usage
    if usage.input_tokens and usage.output_tokens:
        return result
    reply = reply_text(result)
    if usage.input_tokens and not reply:
        return result  # nothing generated: 0 output tokens is the truth
    guess = estimate_usage(request_body_text if not usage.input_tokens else "", reply)
    filled = usage.model_copy(update={
        "input_tokens": usage.input_tokens or guess.input_tokens,
        "output_tokens": usage.output_tokens or guess.output_tokens,
        "estimated": True,
    })
    return result.model_copy(update={"usage": filled})


def _arguments_text(call: ToolCallRequest) -> str:
    if call.arguments_raw is not None:
        return call.arguments_raw
    return json.dumps(call.arguments, ensure_ascii=False)
