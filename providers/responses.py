"""OpenAI Responses API over httpx: map to the wire, map back, classify errors.

    complete(req)
      to_wire(req)               LlmRequest -> request body
      POST {base_url}/responses
        JSON answer              parse_response(body) -> TurnResult
        SSE answer (req.stream)  _StreamState folds the typed events -> TurnResult
      every failure              ProviderError (see providers/errors.py)

Stateless: ``store: false``, and every call sends the whole conversation as ``input`` items:
    system prompt   ``instructions`` (one text)
    user            ``{"type": "message", "role": "user", "content": text}``
    assistant       its reasoning items (below), a ``message`` with role ``assistant`` when
                    it said something, then one ``function_call`` item per call
                    (``call_id``, ``name``, ``arguments`` as JSON text; arguments that did
                    not parse go back as ``{}``: the tool result already told the model)
    tool            ``{"type": "function_call_output", "call_id", "output"}``
    images          after the run of ``function_call_output`` items of one turn, one user
                    message: ``{"type": "message", "role": "user", "content": [{"type":
                    "input_text", "text": "Image from tool call ID (NAME):"}, {"type":
                    "input_image", "image_url": "data:TYPE;base64,...", "detail": "auto"},
                    ...]}``, a text part and the image parts per call
    tools           ``{"type": "function", "name", "description", "parameters",
                    "strict": false}`` (our schemas are not written for strict mode), with
                    ``tool_choice: "auto"``
    max_tokens      ``max_output_tokens``

Reasoning: the request asks for ``include: ["reasoning.encrypted_content"]``, so each
``reasoning`` output item carries its reasoning encrypted. It becomes ThinkingParts marked
``provider="openai_responses"`` with the item's ``id``: one per summary part (its text),
the first carrying the ``encrypted_content`` as its signature. ``to_wire`` puts the item
back together, unchanged, before the assistant's message and calls; an item without
encrypted content is left out (with ``store: false`` the server could not find it), as is
reasoning of other providers. The order of items within one answer is not kept: its
reasoning items go first. ``LlmRequest.thinking_budget`` does not apply to this wire.

Usage: ``input_tokens`` counts every prompt token (as ``Usage.input_tokens`` does);
``input_tokens_details.cached_tokens`` (and ``cache_write_tokens`` where sent) are the
cache counts.

Streaming: ``response.output_item.added`` opens an item, ``response.output_text.delta``
and ``response.function_call_arguments.delta`` fill it (text deltas go to ``on_text``),
``response.output_item.done`` gives it whole, ``response.completed`` (or
``response.incomplete``, for ``max_output_tokens``) ends the answer with the whole response
and its usage. ``response.failed`` and ``error`` events raise a ProviderError classified
by their error code like the same error as an HTTP status (``rate_limit_exceeded`` as 429,
``server_error`` as 500, ``context_length_exceeded`` a ``context_overflow``); a stream that
ends before its last event is a retryable ``stream_cut``. The adapter never retries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from httpx_sse import EventSource

from core.errors import ErrorKind
from core.messages import LlmRequest, TurnResult
from providers.errors import (
    ProviderError,
    error_message,
    is_retryable_status,
    kind_for_status,
    parse_retry_after,
    snippet,
    status_in_body,
)
from providers.http import HttpProvider
from providers.responses_wire import WIRE, input_list, turn_result

ENCRYPTED_REASONING = "reasoning.encrypted_content"
_ENDED = ("response.completed", "response.incomplete")
# Error codes of a failed response or an error event, as the HTTP status of the same error
# (with providers.errors.status_in_body for the codes and types other servers use).
_CODE_STATUS = {
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "server_error": 500,
    "vector_store_timeout": 504,
    "context_length_exceeded": 400,
    "invalid_prompt": 400,
}


class ResponsesProvider(HttpProvider):
    name = WIRE
    path = "/responses"

    # -- to the wire ---------------------------------------------------------

    def to_wire(self, req: LlmRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": req.model}
        instructions = req.system.text()
        if instructions.strip():
            body["instructions"] = instructions
        body["input"] = input_list(req.messages)
        if req.tools:
            body["tools"] = [
                {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters,
                 "strict": False}
                for t in req.tools
            ]
            body["tool_choice"] = "auto"
        if req.max_tokens is not None:
            body["max_output_tokens"] = req.max_tokens
        if req.temperature is not None:
            body["temperature"] = req.temperature
        body["store"] = False
        body["include"] = [ENCRYPTED_REASONING]
        body["stream"] = req.stream  # false too: a server's default may be either
        return body

    # -- from the wire -------------------------------------------------------

    def parse_response(self, body: Any) -> TurnResult:
        if not isinstance(body, dict):
            raise self._bad_response(f"expected a JSON object, got {type(body).__name__}")
        if body.get("status") == "failed" or (body.get("error") and not body.get("output")):
            raise self._failure(_obj(body.get("error")) or body, stream=False)
        output = body.get("output")
        if not isinstance(output, list):
            detail = error_message(body)
            raise self._bad_response("response has no output list" + (f": {detail}" if detail else ""))
        return turn_result([_obj(item) for item in output], body)

    # -- the call ------------------------------------------------------------

    async def _read_stream(self, source: EventSource, on_text: Callable[[str], None] | None) -> TurnResult:
        state = _StreamState()
        try:
            async for event in source.aiter_sse():
                data = event.data.strip()
                if data == "[DONE]":
                    break
                if not data:
                    continue
                delta = state.feed(self._stream_json(data))
                if state.error is not None:
                    raise self._failure(state.error, stream=True)
                if delta and on_text is not None:
                    on_text(delta)
                if state.final is not None:
                    break
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.TimeoutException) or not state.started:
                raise
            raise self._error(
                f"stream cut off: {type(exc).__name__}: {exc}", retryable=True, kind=ErrorKind.STREAM_CUT
            ) from exc
        if state.final is None and not state.started:
            raise self._error("empty stream: it ended before its first event", retryable=True, kind=ErrorKind.EMPTY_RESPONSE)
        if state.final is None:
            raise self._error("stream ended without response.completed", retryable=True, kind=ErrorKind.STREAM_CUT)
        return state.result()

    # -- errors --------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}


    def _status_error(self, response: httpx.Response) -> ProviderError:
        status = response.status_code
        try:
            body = response.json()
        except ValueError:
            body = None
        message = error_message(body) or snippet(response.text) or f"HTTP {status} {response.reason_phrase}".strip()
        code = _obj(_obj(body).get("error")).get("code")
        if isinstance(code, str) and code not in message:
            message = f"{message} ({code})"
        return self._error(
            message,
            retryable=is_retryable_status(status),
            kind=kind_for_status(status),
            status=status,
            retry_after_s=parse_retry_after(response.headers),
        )

    def _failure(self, error: dict[str, Any], *, stream: bool) -> ProviderError:
        """A failed response's ``error`` or an ``error`` event (its fields at the top or
        under ``error``), classified by its code like the same error as an HTTP status."""
        error = _obj(error.get("error")) or error
        kind_of_error = _str(error.get("type"))  # an HTTP-style error object's type; "error" on an event
        code = _str(error.get("code")) or (kind_of_error if kind_of_error != "error" else None)
        status = _CODE_STATUS.get(code or "") or status_in_body(error)
        if status is not None:
            kind, retryable = kind_for_status(status), is_retryable_status(status)
        else:  # no code: most likely the server's trouble; an unknown code: the request's
            kind, retryable = (ErrorKind.STREAM_ERROR if stream else ErrorKind.API_ERROR), code is None
        text = _str(error.get("message")) or code or snippet(json.dumps(error))
        if code and code not in text:
            text = f"{text} ({code})"
        return self._error(f"{'error in stream' if stream else 'failed response'}: {text}",
                           retryable=retryable, kind=kind)


class _StreamState:
    """Folds the Responses stream events into the output items of one response."""

    def __init__(self) -> None:
        self.started = False
        self.final: dict[str, Any] | None = None  # the response of response.completed / .incomplete
        self.error: dict[str, Any] | None = None  # response.failed's error, or an error event
        self.model: str | None = None
        self._items: dict[int, dict[str, Any]] = {}
        self._text: dict[int, list[str]] = {}
        self._arguments: dict[int, list[str]] = {}

    def feed(self, event: dict[str, Any]) -> str:
        """Take one event; return its text delta ("" if none)."""
        self.started = True
        kind = event.get("type")
        index = event.get("output_index")
        index = index if isinstance(index, int) else max(self._items, default=0)
        response = _obj(event.get("response"))
        self.model = _str(response.get("model")) or self.model
        match kind:
            case "response.output_item.added" | "response.output_item.done":
                self._items[index] = dict(_obj(event.get("item")))
            case "response.output_text.delta":
                delta = _str(event.get("delta")) or ""
                self._text.setdefault(index, []).append(delta)
                return delta
            case "response.function_call_arguments.delta":
                self._arguments.setdefault(index, []).append(_str(event.get("delta")) or "")
            case "response.function_call_arguments.done" if isinstance(event.get("arguments"), str):
                self._arguments[index] = [event["arguments"]]
            case "response.failed":
                self.error = _obj(response.get("error")) or {"message": "response failed"}
            case "error":
                self.error = event
            case _ if kind in _ENDED:
                self.final = response
        return ""  # created, in_progress, content parts, summaries and event types added later

    def result(self) -> TurnResult:
        final = self.final or {}
        output = final.get("output")
        if not isinstance(output, list) or not output:  # some servers send the items only as events
            output = [self._item(i) for i in sorted(self._items)]
        return turn_result([_obj(item) for item in output], {"model": self.model, **final})

    def _item(self, index: int) -> dict[str, Any]:
        item = self._items[index]
        if item.get("type") == "message" and not item.get("content") and index in self._text:
            item = {**item, "content": [{"type": "output_text", "text": "".join(self._text[index])}]}
        if item.get("type") == "function_call" and not item.get("arguments") and index in self._arguments:
            item = {**item, "arguments": "".join(self._arguments[index])}
        return item


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
