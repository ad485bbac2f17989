"""OpenAI Responses API over httpx: map to the wire, map back, classify errors. Stateless:
``store: false``, and every call sends the whole conversation as ``input`` items
(``providers/responses_wire.py``), reasoning included as encrypted items
(``include: ["reasoning.encrypted_content"]``). A stream's typed events are folded into
the response's output items; a failed response or an ``error`` event is classified by its
code like the same error as an HTTP status. The rules: docs/providers.md."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from httpx_sse import EventSource

from core.errors import ErrorKind
from core.messages import LlmRequest, TurnResult
from providers.errors import ProviderError, error_message, is_retryable_status, kind_for_status, snippet, status_in_body
from providers.http import HttpProvider
from providers.responses_wire import WIRE, input_list, turn_result
from providers.wire import as_obj, as_str

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
            raise self._failure(as_obj(body.get("error")) or body, stream=False)
        output = body.get("output")
        if not isinstance(output, list):
            detail = error_message(body)
            raise self._bad_response("response has no output list" + (f": {detail}" if detail else ""))
        return turn_result([as_obj(item) for item in output], body)

    # -- the call ------------------------------------------------------------

    async def _read_stream(self, source: EventSource, on_text: Callable[[str], None] | None) -> TurnResult:
        state = _StreamState()
        with self._cut_offs(state):
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
        if state.final is None:
            raise self._ended_early(state, "response.completed")
        return state.result()

    # -- errors --------------------------------------------------------------

    def _status_message(self, body: Any, fallback: str) -> str:
        """The body's message, else ``fallback``, with the error's code when it adds something."""
        message = error_message(body) or fallback
        code = as_obj(as_obj(body).get("error")).get("code")
        return f"{message} ({code})" if isinstance(code, str) and code not in message else message

    def _failure(self, error: dict[str, Any], *, stream: bool) -> ProviderError:
        """A failed response's ``error`` or an ``error`` event (its fields at the top or
        under ``error``), classified by its code like the same error as an HTTP status."""
        error = as_obj(error.get("error")) or error
        kind_of_error = as_str(error.get("type"))  # an HTTP-style error object's type; "error" on an event
        code = as_str(error.get("code")) or (kind_of_error if kind_of_error != "error" else None)
        status = _CODE_STATUS.get(code or "") or status_in_body(error)
        if status is not None:
            kind, retryable = kind_for_status(status), is_retryable_status(status)
        else:  # no code: most likely the server's trouble; an unknown code: the request's
            kind, retryable = (ErrorKind.STREAM_ERROR if stream else ErrorKind.API_ERROR), code is None
        text = as_str(error.get("message")) or code or snippet(json.dumps(error))
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
        response = as_obj(event.get("response"))
        self.model = as_str(response.get("model")) or self.model
        match kind:
            case "response.output_item.added" | "response.output_item.done":
                self._items[index] = dict(as_obj(event.get("item")))
            case "response.output_text.delta":
                delta = as_str(event.get("delta")) or ""
                self._text.setdefault(index, []).append(delta)
                return delta
            case "response.function_call_arguments.delta":
                self._arguments.setdefault(index, []).append(as_str(event.get("delta")) or "")
            case "response.function_call_arguments.done" if isinstance(event.get("arguments"), str):
                self._arguments[index] = [event["arguments"]]
            case "response.failed":
                self.error = as_obj(response.get("error")) or {"message": "response failed"}
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
        return turn_result([as_obj(item) for item in output], {"model": self.model, **final})

    def _item(self, index: int) -> dict[str, Any]:
        item = self._items[index]
        if item.get("type") == "message" and not item.get("content") and index in self._text:
            item = {**item, "content": [{"type": "output_text", "text": "".join(self._text[index])}]}
        if item.get("type") == "function_call" and not item.get("arguments") and index in self._arguments:
            item = {**item, "arguments": "".join(self._arguments[index])}
        return item
