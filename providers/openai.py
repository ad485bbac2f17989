"""OpenAI chat completions over httpx: map to the wire, map back, classify errors.
The same wire serves OpenAI, vLLM, Ollama (``/v1``) and llama.cpp's server.

    complete(req)
      to_wire(req)               LlmRequest -> request body
      POST {base_url}/chat/completions
        JSON answer              parse_response(body) -> TurnResult
        SSE answer (req.stream)  _StreamState folds chunks -> TurnResult
      every failure              ProviderError (see providers/errors.py)

What goes on the wire, accepted by all four servers:
    stream                       always sent, ``false`` too (``--no-stream``)
    tool_choice: "auto"          whenever tools are sent (and never without tools: vLLM and
                                 OpenAI refuse that); llama.cpp's ``--jinja`` templates and
                                 vLLM's auto tool choice read it, the others default to it
    assistant content            a string, "" when the message only calls tools: llama.cpp
                                 needs the key, and its Jinja templates fail (500) on null
    earlier tool arguments       always a JSON object string (providers/arguments.py)
    images                       a tool message takes text only (OpenAI answers 400 "Image URLs
                                 are only allowed for messages with role 'user'"), so the images
                                 of a run of tool messages follow it in ONE user message:
                                 {"role": "user", "content": [
                                   {"type": "text", "text": "Image from tool call ID (NAME):"},
                                   {"type": "image_url", "image_url": {"url": "data:TYPE;base64,..."}},
                                   ...one text part and its image parts per call]}
                                 a user message with images (the XML path) is the same array:
                                 its text part, then its image parts

Failures and their kinds, the same whether the answer was streamed or not:
    HTTP status >= 400           kind_for_status(): rate_limited, auth, not_found,
                                 bad_request, server_error, ...; retryable per status
    an error object in the body  classified by the status it names (``code`` 400, ``type``
      (200 JSON, a ``data:``     "server_error", ...) exactly as that HTTP status would be;
      chunk, llama.cpp's         unknown errors are retryable (kind api_error)
      ``error:`` line)
    "maximum context length" &c  context_overflow (not retryable; providers/http.py)
    httpx.TimeoutException       timeout (retryable)
    httpx.TransportError         connection (retryable); stream_cut once events arrived
    empty body, or a stream      empty_response (retryable)
      without a single chunk
    stream ends early            stream_cut (retryable)
    truncated JSON body          truncated_response (retryable)
    other unparseable 2xx body   bad_response (not retryable)

The adapter never retries: Temporal owns retries so every attempt is visible
in the workflow history.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, assert_never

import httpx
from httpx_sse import EventSource

from core.errors import ErrorKind
from core.messages import ChatMessage, ImagePart, LlmRequest, ThinkingPart, ToolCallRequest, TurnResult, Usage
from providers.arguments import history_arguments
from providers.errors import ProviderError, is_retryable_status, kind_for_status, parse_retry_after, status_in_body
from providers.errors import error_message as _error_message
from providers.errors import snippet as _snippet
from providers.http import HttpProvider
from providers.sse import Events


class OpenAIProvider(HttpProvider):
    name = "openai"
    path = "/chat/completions"

    # -- to the wire ---------------------------------------------------------

    def to_wire(self, req: LlmRequest) -> dict[str, Any]:
        # OpenAI-compatible servers cache stable prefixes by themselves: one system text.
        messages: list[dict[str, Any]] = [{"role": "system", "content": req.system.text()}]
        messages.extend(messages_to_wire(req.messages))
        body: dict[str, Any] = {"model": req.model, "messages": messages}
        if req.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in req.tools
            ]
            body["tool_choice"] = "auto"
        if req.max_tokens is not None:
            body["max_tokens"] = req.max_tokens
        if req.temperature is not None:
            body["temperature"] = req.temperature
        body["stream"] = req.stream
        if req.stream:
            body["stream_options"] = {"include_usage": True}
        return body

    # -- from the wire -------------------------------------------------------

    def parse_response(self, body: Any) -> TurnResult:
        if not isinstance(body, dict):
            raise self._bad_response(f"expected a JSON object, got {type(body).__name__}")
        choices = body.get("choices")
        if not choices and (body.get("error") or body.get("object") == "error"):  # an error, answered 200
            raise self._body_error(body, json.dumps(body))
        if not isinstance(choices, list) or not choices:
            detail = _error_message(body)
            raise self._bad_response("response has no choices" + (f": {detail}" if detail else ""))
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise self._bad_response("choices[0] has no message object")
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise self._bad_response("message.tool_calls is not a list")
        calls = []
        for index, raw in enumerate(raw_calls):
            raw = _obj(raw)
            function = _obj(raw.get("function"))
            calls.append(_tool_call(raw.get("id"), function.get("name"), function.get("arguments"), index))
        return TurnResult(
            content=_text(message.get("content")),
            tool_calls=calls,
            thinking=_thinking(_text(message.get("reasoning_content") or message.get("reasoning"))),
            usage=_usage(body.get("usage")),
            finish_reason=_str(choice.get("finish_reason")),
            model=_str(body.get("model")),
        )

    # -- the call ------------------------------------------------------------

    async def _read_stream(self, source: EventSource, on_text: Callable[[str], None] | None) -> TurnResult:
        state = _StreamState()
        events = Events(source.response)
        try:
            async for event in events:
                data = event.data.strip()
                if event.event == "error":  # llama.cpp: "error: {...}", then "data: [DONE]"
                    raise self._body_error(self._event_json(event.data), event.data)
                if data == "[DONE]":
                    state.done = True
                    break
                if not data:
                    continue
                delta = state.feed(self._chunk(event.data))
                if delta and on_text is not None:
                    on_text(delta)
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.TimeoutException) or not state.started:
                raise
            raise self._error(
                f"stream cut off: {type(exc).__name__}: {exc}", retryable=True, kind=ErrorKind.STREAM_CUT
            ) from exc
        if not state.started:  # no chunk at all: whatever came is read as a plain answer
            return self._whole_answer("\n".join(events.stray), source.response.status_code, on_text)
        if not state.done and state.finish_reason is None:
            raise self._error(
                "stream ended without [DONE] or a finish_reason", retryable=True, kind=ErrorKind.STREAM_CUT
            )
        return state.result()

    # -- errors --------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _chunk(self, data: str) -> dict[str, Any]:
        chunk = self._event_json(data)
        if chunk.get("error") or chunk.get("object") == "error":
            raise self._body_error(chunk, data)
        return chunk

    def _event_json(self, data: str) -> dict[str, Any]:
        return self._stream_json(data, "stream chunk")

    def _body_error(self, body: dict[str, Any], raw: str) -> ProviderError:
        """An error object in a 200 answer or in a stream, classified like the HTTP status it
        names: ``{"error": {...}}`` (OpenAI, vLLM, Ollama), ``{"object": "error", ...}``
        (older vLLM) or llama.cpp's bare ``{"code": 400, "message": ..., "type": ...}``."""
        error = body.get("error") if isinstance(body.get("error"), dict) else body
        status = status_in_body(error)
        message = _message(body) or _snippet(raw)
        if status is None:  # nothing says what it is: most likely the server's own trouble
            return self._error(message, retryable=True, kind=ErrorKind.API_ERROR, body=raw)
        return self._error(message, retryable=is_retryable_status(status), kind=kind_for_status(status),
                           status=status, body=raw)

    def _status_error(self, response: httpx.Response) -> ProviderError:
        status = response.status_code
        try:
            detail = _message(response.json())
        except ValueError:
            detail = None
        message = detail or _snippet(response.text) or f"HTTP {status} {response.reason_phrase}".strip()
        return self._error(
            message,
            retryable=is_retryable_status(status),
            kind=kind_for_status(status),
            status=status,
            retry_after_s=parse_retry_after(response.headers),
        )


def _message(body: Any) -> str | None:
    """The server's message, with OpenAI's string error code when it adds something
    (``context_length_exceeded``, ``rate_limit_exceeded``)."""
    message = _error_message(body)
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    if message and isinstance(code, str) and not code.isdigit() and code not in message:
        message = f"{message} ({code})"
    return message


class _StreamState:
    """Folds ``chat.completion.chunk`` events into one TurnResult."""

    def __init__(self) -> None:
        self.started = False
        self.done = False
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.usage = Usage()
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}

    def feed(self, chunk: dict[str, Any]) -> str:
        """Take one chunk; return its content delta ("" if none)."""
        self.started = True
        self.model = _str(chunk.get("model")) or self.model
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
        choices = chunk.get("choices")
        choice = _obj(choices[0]) if isinstance(choices, list) and choices else {}
        self.finish_reason = _str(choice.get("finish_reason")) or self.finish_reason
        delta = _obj(choice.get("delta"))
        reasoning = _text(delta.get("reasoning_content") or delta.get("reasoning"))
        if reasoning:
            self._reasoning.append(reasoning)
        fragments = delta.get("tool_calls")
        for fragment in fragments if isinstance(fragments, list) else []:
            self._add_fragment(_obj(fragment))
        text = _text(delta.get("content"))
        if text:
            self._content.append(text)
        return text

    def _add_fragment(self, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        if not isinstance(index, int):  # some servers omit index: a new id opens a new call
            known = {c["id"] for c in self._calls.values()}
            if not self._calls or (fragment.get("id") and fragment["id"] not in known):
                index = max(self._calls, default=-1) + 1
            else:
                index = max(self._calls)
        call = self._calls.setdefault(index, {"id": None, "name": "", "arguments": []})
        if fragment.get("id"):
            call["id"] = fragment["id"]
        function = _obj(fragment.get("function"))
        if isinstance(function.get("name"), str) and function["name"]:
            call["name"] = function["name"]
        if isinstance(function.get("arguments"), str):
            call["arguments"].append(function["arguments"])

    def result(self) -> TurnResult:
        calls = [
            _tool_call(call["id"], call["name"], "".join(call["arguments"]), position)
            for position, (_, call) in enumerate(sorted(self._calls.items()))
        ]
        return TurnResult(
            content="".join(self._content),
            tool_calls=calls,
            thinking=_thinking("".join(self._reasoning)),
            usage=self.usage,
            finish_reason=self.finish_reason,
            model=self.model,
        )


def _thinking(reasoning: str) -> list[ThinkingPart]:
    """The reasoning text (``reasoning_content`` or ``reasoning``) as one unsigned part."""
    return [ThinkingPart(text=reasoning, provider="openai")] if reasoning else []


def messages_to_wire(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """The conversation as chat messages; the images of each run of tool messages (the results
    of one assistant turn) in one user message right after the run, since only a user message
    may carry images."""
    wire: list[dict[str, Any]] = []
    shown: list[ChatMessage] = []  # tool messages of the current run that carry images
    for message in messages:
        if message.role != "tool" and shown:
            wire.append(tool_images_message(shown))
            shown = []
        wire.append(_message_to_wire(message))
        if message.role == "tool" and message.images:
            shown.append(message)
    if shown:
        wire.append(tool_images_message(shown))
    return wire


def tool_images_message(results: list[ChatMessage]) -> dict[str, Any]:
    """The user message that shows the images of tool results: each call named in a text part,
    its images after it, so the model knows which call produced which image."""
    content: list[dict[str, Any]] = []
    for result in results:
        content.append({"type": "text", "text": f"Image from tool call {result.tool_call_id} ({result.name}):"})
        content += [image_part(image) for image in result.images]
    return {"role": "user", "content": content}


def image_part(image: ImagePart) -> dict[str, Any]:
    """An ``image_url`` content part holding the image inline, as a base64 data URL."""
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}


def _message_to_wire(message: ChatMessage) -> dict[str, Any]:
    match message.role:
        case "user":
            if message.images:  # tool results as text (XML path): the text, then the images
                text = [{"type": "text", "text": message.content}] if message.content else []
                return {"role": "user", "content": text + [image_part(i) for i in message.images]}
            return {"role": "user", "content": message.content}
        case "tool":
            return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
        case "assistant":
            # Never null: llama.cpp's templates fail on it (500); "" is accepted everywhere.
            wire: dict[str, Any] = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                wire["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": _arguments_to_wire(call)},
                    }
                    for call in message.tool_calls
                ]
            return wire
        case _:
            assert_never(message.role)


def _arguments_to_wire(call: ToolCallRequest) -> str:
    """Always a JSON object: arguments that did not parse go back as a placeholder."""
    return json.dumps(history_arguments(call), ensure_ascii=False)


def _tool_call(call_id: Any, name: Any, arguments: Any, index: int) -> ToolCallRequest:
    """One wire tool call; arguments that are not a JSON object become a parse_error."""
    call_id = call_id if isinstance(call_id, str) and call_id else f"call_{index}"
    name = name if isinstance(name, str) else ""
    if isinstance(arguments, dict):  # some compatible servers send the object itself
        return ToolCallRequest(id=call_id, name=name, arguments=arguments)
    raw = arguments if isinstance(arguments, str) else ""
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


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    def count(value: Any) -> int:
        return value if isinstance(value, int) and value > 0 else 0

    return Usage(
        input_tokens=count(raw.get("prompt_tokens")),
        output_tokens=count(raw.get("completion_tokens")),
        cache_read_tokens=count(_obj(raw.get("prompt_tokens_details")).get("cached_tokens")),
    )


def _text(value: Any) -> str:
    """Message content as text: a string, or a list of ``{"type": "text"}`` parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(p.get("text") or "" for p in value if isinstance(p, dict))
    return ""


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
