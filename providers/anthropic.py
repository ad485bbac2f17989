"""Anthropic Messages API over httpx: map to the wire, map back, classify errors.

    complete(req)
      to_wire(req)               LlmRequest -> request body
      POST {base_url}/v1/messages
        JSON answer              parse_response(body) -> TurnResult
        SSE answer (req.stream)  _StreamState folds the named events -> TurnResult
      every failure              ProviderError (see providers/errors.py)

The mapping:
    system prompt   top-level ``system`` text blocks from the two parts of the typed
                    ``SystemPrompt``: the stable part carries ``cache_control: ephemeral``,
                    the dynamic part does not; empty blocks are left out.
    tools           ``name``, ``description``, ``input_schema``; the last one cached.
    user / tool     ``user`` messages; a tool result is a ``tool_result`` block, and a
                    user message that holds tool results lists them first.
    images          inside the ``tool_result`` block of the call that produced them: its
                    ``content`` is then a list, a text block (unless the text is empty) and
                    ``{"type": "image", "source": {"type": "base64", "media_type": ...,
                    "data": ...}}`` per image; a user message's images (the XML path) are
                    image blocks after its text.
    assistant       signed thinking blocks, then the text, then ``tool_use`` blocks.
    consecutive messages of one role are merged into one message.

Prompt caching: the API caches the prefix up to each ``cache_control`` block, in the order
tools, system, messages, and allows four such breakpoints. They go on the last tool, the
stable system block, and the last block of the two latest user messages (tool results,
images or words; a tool_result holding images is marked as a whole, never inside), so
they move with the conversation: each call reads what the previous one wrote
and writes the new part.

Extended thinking (``LlmRequest.thinking_budget``): ``thinking: {"type": "enabled",
"budget_tokens": N}`` (N at least 1024, and below ``max_tokens`` as the API wants): without
a ``max_tokens`` of the caller's, the default is raised to leave ``ANSWER_ROOM`` tokens after
the budget; a ``max_tokens`` the caller set (the model's longest reply) stays, and the budget
shrinks to leave the answer room, or thinking is off for a call with too little room. No
temperature is sent with thinking (the API refuses one), and ``tool_choice`` never is, so it
stays ``auto`` as thinking requires. The API wants a whole assistant turn in one mode, so
a tool-use loop that began without a thinking block (before the budget was set, or on
another provider before a failover) finishes without thinking; the next turn thinks again.

Thinking blocks carry a signature that must come back unchanged in the next request. Each
``thinking`` block becomes a ``ThinkingPart`` with its text and signature, each
``redacted_thinking`` block one with its ``redacted_data``, both marked
``provider="anthropic"``; ``to_wire`` turns them back into the same blocks, in their order,
first in the assistant message, before its text and ``tool_use`` blocks. Other thinking
(unsigned, e.g. from an OpenAI-compatible model) is not sent: the API rejects it.
``core.messages.thinking_text()`` gives the readable text for logs and UIs.

Usage: ``Usage.input_tokens`` counts every prompt token, as on the OpenAI wire, so it is
Anthropic's ``input_tokens`` (the uncached part) plus ``cache_read_input_tokens`` plus
``cache_creation_input_tokens``; the two cache counts are also kept on their own.

Failures: HTTP status as in providers/errors.py, with 529 and ``overloaded_error``
retryable (kind ``overloaded``); an error object in a 200 answer or an ``event: error`` in
a stream is classified by its error type like the same error as an HTTP status
(``rate_limit_error`` as 429, ``invalid_request_error`` as 400, ...); "prompt is too long"
in any of them is a ``context_overflow`` (providers/http.py); a stream that ends before
``message_stop`` is a retryable ``stream_cut`` (``empty_response`` if it sent no event at
all). The adapter never retries.
"""

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
from providers.errors import (
    ProviderError,
    error_message,
    is_retryable_status,
    kind_for_status,
    parse_retry_after,
    snippet,
)
from providers.http import HttpProvider

DEFAULT_MAX_TOKENS = 8192
MIN_THINKING_BUDGET = 1024  # the API's minimum budget_tokens
ANSWER_ROOM = 4096  # tokens max_tokens leaves for the answer after the thinking budget
LATEST_TURN_BREAKPOINTS = 2  # cache breakpoints on the newest user messages
# From this API version on the Messages API rejects temperature/top_p/top_k.
SAMPLING_REMOVED_IN = "2026-10-21"

_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
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
            _str(body.get("stop_reason")),
            usage if isinstance(usage, dict) else {},
            _str(body.get("model")),
        )

    # -- the call ------------------------------------------------------------

    async def _read_stream(self, source: EventSource, on_text: Callable[[str], None] | None) -> TurnResult:
        state = _StreamState()
        try:
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
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.TimeoutException) or not state.started:
                raise
            raise self._error(
                f"stream cut off: {type(exc).__name__}: {exc}", retryable=True, kind=ErrorKind.STREAM_CUT
            ) from exc
        if not state.started:
            raise self._error("empty stream: it ended before its first event", retryable=True, kind=ErrorKind.EMPTY_RESPONSE)
        if not state.done:
            raise self._error("stream ended without message_stop", retryable=True, kind=ErrorKind.STREAM_CUT)
        return state.result()

    # -- errors --------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self._version, "content-type": "application/json"}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers


    def _status_error(self, response: httpx.Response) -> ProviderError:
        status = response.status_code
        try:
            body = response.json()
        except ValueError:
            body = None
        overloaded = _error_type(body) == "overloaded_error"
        fallback = f"HTTP {status} {response.reason_phrase}".strip()
        message = error_message(body) or snippet(response.text) or fallback
        return self._error(
            message,
            retryable=is_retryable_status(status) or overloaded,
            kind=ErrorKind.OVERLOADED if overloaded else kind_for_status(status),
            status=status,
            retry_after_s=parse_retry_after(response.headers),
        )

    def _api_error(self, body: dict[str, Any], *, stream: bool) -> ProviderError:
        """An error object in a 200 answer or an ``event: error`` in a stream, classified like
        the same error type as an HTTP status."""
        error_type = _error_type(body)
        status = _ERROR_STATUS.get(error_type or "")
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
                message = _obj(event.get("message"))
                self.model = _str(message.get("model")) or self.model
                self._add_usage(message.get("usage"))
            case "content_block_start":
                self._blocks[_index(event)] = dict(_obj(event.get("content_block")))
            case "content_block_delta":
                return self._delta(_index(event), _obj(event.get("delta")))
            case "message_delta":
                self.stop_reason = _str(_obj(event.get("delta")).get("stop_reason")) or self.stop_reason
                self._add_usage(event.get("usage"))
            case "message_stop":
                self.done = True
        return ""  # ping, content_block_stop and event types added later carry no content

    def _delta(self, index: int, delta: dict[str, Any]) -> str:
        kind = delta.get("type")
        block = self._blocks.setdefault(index, {"type": _DELTA_BLOCK.get(str(kind), "text")})
        match kind:
            case "text_delta":
                text = _str(delta.get("text")) or ""
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
        self.usage.update({k: v for k, v in _obj(raw).items() if isinstance(v, int)})

    def result(self) -> TurnResult:
        order = sorted(self._blocks)
        raw_json = {position: "".join(self._json[i]) for position, i in enumerate(order) if i in self._json}
        blocks = [self._blocks[i] for i in order]
        return turn_result(blocks, raw_json, self.stop_reason, self.usage, self.model)


def _error_type(body: Any) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    return _str(error.get("type")) if isinstance(error, dict) else None


def _index(event: dict[str, Any]) -> int:
    index = event.get("index")
    return index if isinstance(index, int) else 0


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
