"""Anthropic Messages API over httpx: map to the wire, map back, classify errors. The body
and the answer's content blocks are ``providers/anthropic_wire.py``'s; here are the request's
settings (``max_tokens``, extended thinking and its budget, temperature, the cache
breakpoints that move with the conversation), the stream of named events folded into one
message, and the errors: 529 and ``overloaded_error`` are retryable (kind ``overloaded``),
an error object in a 200 answer or an ``event: error`` in a stream is classified like the
same error type as an HTTP status. The rules: docs/providers.md."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from httpx_sse import EventSource

from core.errors import ErrorKind
from core.messages import LlmRequest, TurnResult
from providers.anthropic_wire import (
    MAX_BREAKPOINTS,
    count_breakpoints,
    mark_latest_turns,
    messages_to_wire,
    system_blocks,
    tools_to_wire,
    turn_began_without_thinking,
    turn_result,
)
from providers.errors import ProviderError, error_message, is_retryable_status, kind_for_status, snippet, status_in_body
from providers.http import HttpProvider
from providers.wire import as_obj, as_str

DEFAULT_MAX_TOKENS = 8192
MIN_THINKING_BUDGET = 1024  # the API's minimum budget_tokens
ANSWER_ROOM = 4096  # tokens max_tokens leaves for the answer after the thinking budget
LATEST_TURN_BREAKPOINTS = 2  # cache breakpoints on the newest user messages
# From this API version on the Messages API rejects temperature/top_p/top_k.
SAMPLING_REMOVED_IN = "2026-10-21"

_DELTA_BLOCK = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "thinking",
                "input_json_delta": "tool_use"}


class AnthropicProvider(HttpProvider):
    name = "anthropic"
    path = "/v1/messages"

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        version: str = "2023-06-01",
        client: httpx.AsyncClient | None = None,
        timeout_s: float = 600.0,
        stream_idle_s: float = 60.0,
    ) -> None:
        super().__init__(base_url, api_key, client=client, timeout_s=timeout_s, stream_idle_s=stream_idle_s)
        self._version = version

    # -- to the wire ---------------------------------------------------------

    def to_wire(self, req: LlmRequest) -> dict[str, Any]:
        max_tokens = req.max_tokens if req.max_tokens is not None else DEFAULT_MAX_TOKENS
        body: dict[str, Any] = {"model": req.model, "max_tokens": max_tokens}
        system = system_blocks(req.system)
        if system:
            body["system"] = system
        messages = messages_to_wire(req.messages)
        body["messages"] = messages
        if req.tools:
            body["tools"] = tools_to_wire(req.tools)
        budget = thinking_budget(req.thinking_budget, req.max_tokens)
        if budget and not turn_began_without_thinking(messages):
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            if req.max_tokens is None:
                body["max_tokens"] = max(max_tokens, budget + ANSWER_ROOM)
        elif req.temperature is not None and self._version < SAMPLING_REMOVED_IN:
            body["temperature"] = req.temperature
        mark_latest_turns(messages, min(LATEST_TURN_BREAKPOINTS, MAX_BREAKPOINTS - count_breakpoints(body)))
        if req.stream:
            body["stream"] = True
        return body

    # -- from the wire -------------------------------------------------------

    def parse_response(self, body: Any) -> TurnResult:
        if not isinstance(body, dict):
            raise self._bad_response(f"expected a JSON object, got {type(body).__name__}")
        if body.get("type") == "error":
            raise self._api_error(body, stream=False)
        content = body.get("content")
        if not isinstance(content, list):
            detail = error_message(body)
            raise self._bad_response("response has no content list" + (f": {detail}" if detail else ""))
        usage = body.get("usage")
        return turn_result(
            [b for b in content if isinstance(b, dict)],
            {},
            as_str(body.get("stop_reason")),
            usage if isinstance(usage, dict) else {},
            as_str(body.get("model")),
        )

    # -- the call ------------------------------------------------------------

    async def _read_stream(self, source: EventSource, on_text: Callable[[str], None] | None) -> TurnResult:
        state = _StreamState()
        with self._cut_offs(state):
            async for event in source.aiter_sse():
                if not event.data.strip():
                    continue
                data = self._stream_json(event.data)
                if event.event == "error" or data.get("type") == "error":
                    raise self._api_error(data, stream=True)
                delta = state.feed(data)
                if delta and on_text is not None:
                    on_text(delta)
                if state.done:
                    break
        if not state.done:
            raise self._ended_early(state, "message_stop")
        return state.result()

    # -- errors --------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self._version, "content-type": "application/json"}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def _status_kind(self, status: int, body: Any) -> tuple[ErrorKind, bool]:
        if _error_type(body) == "overloaded_error":  # retryable whatever the status
            return ErrorKind.OVERLOADED, True
        return super()._status_kind(status, body)

    def _api_error(self, body: dict[str, Any], *, stream: bool) -> ProviderError:
        """An error object in a 200 answer or an ``event: error`` in a stream, classified like
        the same error type as an HTTP status."""
        error_type = _error_type(body)
        status = status_in_body(body.get("error"))
        if error_type == "overloaded_error":
            kind = ErrorKind.OVERLOADED
        elif status is not None:
            kind = kind_for_status(status)
        else:
            kind = ErrorKind.STREAM_ERROR if stream else ErrorKind.API_ERROR
        # An unknown error type mid-stream is most likely the server's trouble.
        retryable = is_retryable_status(status) if status is not None else stream
        where = "error in stream" if stream else "error in response"
        message = f"{where}: {error_message(body) or error_type or snippet(json.dumps(body))}"
        return self._error(message, retryable=retryable, kind=kind)


def thinking_budget(wanted: int | None, max_tokens: int | None) -> int | None:
    """The budget_tokens to send (None: no thinking): at least the API's minimum, and under a
    max_tokens the caller set (the model's longest reply) small enough to leave the answer
    ANSWER_ROOM tokens, or half of max_tokens if that is less; None when that leaves the
    budget under the minimum."""
    if not wanted:
        return None
    budget = max(MIN_THINKING_BUDGET, wanted)
    if max_tokens is not None:
        budget = min(budget, max_tokens - min(ANSWER_ROOM, max_tokens // 2))
    return budget if budget >= MIN_THINKING_BUDGET else None


class _StreamState:
    """Folds the Messages stream events into the content blocks of one message."""

    def __init__(self) -> None:
        self.started = False
        self.done = False
        self.stop_reason: str | None = None
        self.model: str | None = None
        self.usage: dict[str, Any] = {}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}

    def feed(self, event: dict[str, Any]) -> str:
        """Take one event; return its text delta ("" if none)."""
        self.started = True
        match event.get("type"):
            case "message_start":
                message = as_obj(event.get("message"))
                self.model = as_str(message.get("model")) or self.model
                self._add_usage(message.get("usage"))
            case "content_block_start":
                self._blocks[_index(event)] = dict(as_obj(event.get("content_block")))
            case "content_block_delta":
                return self._delta(_index(event), as_obj(event.get("delta")))
            case "message_delta":
                self.stop_reason = as_str(as_obj(event.get("delta")).get("stop_reason")) or self.stop_reason
                self._add_usage(event.get("usage"))
            case "message_stop":
                self.done = True
        return ""  # ping, content_block_stop and event types added later carry no content

    def _delta(self, index: int, delta: dict[str, Any]) -> str:
        kind = delta.get("type")
        block = self._blocks.setdefault(index, {"type": _DELTA_BLOCK.get(str(kind), "text")})
        match kind:
            case "text_delta":
                text = as_str(delta.get("text")) or ""
                block["text"] = block.get("text", "") + text
                return text
            case "input_json_delta":
                partial = delta.get("partial_json")
                self._json.setdefault(index, []).append(partial if isinstance(partial, str) else "")
            case "thinking_delta":
                block["thinking"] = block.get("thinking", "") + str(delta.get("thinking") or "")
            case "signature_delta":
                block["signature"] = block.get("signature", "") + str(delta.get("signature") or "")
        return ""

    def _add_usage(self, raw: Any) -> None:
        self.usage.update({k: v for k, v in as_obj(raw).items() if isinstance(v, int)})

    def result(self) -> TurnResult:
        order = sorted(self._blocks)
        raw_json = {position: "".join(self._json[i]) for position, i in enumerate(order) if i in self._json}
        blocks = [self._blocks[i] for i in order]
        return turn_result(blocks, raw_json, self.stop_reason, self.usage, self.model)


def _error_type(body: Any) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    return as_str(error.get("type")) if isinstance(error, dict) else None


def _index(event: dict[str, Any]) -> int:
    index = event.get("index")
    return index if isinstance(index, int) else 0
