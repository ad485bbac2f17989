"""OpenAI chat completions over httpx: map to the wire, map back, classify errors. The same
wire serves OpenAI, vLLM, Ollama (``/v1``) and llama.cpp's server, so what goes on it is
what all four accept: ``stream`` always sent, ``tool_choice: "auto"`` only with tools, an
assistant's content never null, earlier arguments always a JSON object, the images of tool
results in one user message after them. An error object in a body (a 200 answer, a chunk,
llama.cpp's ``error:`` line) is classified like the HTTP status it names. The rules, server
by server: docs/providers.md."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, assert_never

from httpx_sse import EventSource

from core.errors import ErrorKind
from core.messages import ChatMessage, ImagePart, LlmRequest, ThinkingPart, ToolCallRequest, TurnResult, Usage
from providers.arguments import history_arguments
from providers.errors import ProviderError, error_message, is_retryable_status, kind_for_status, snippet, status_in_body
from providers.http import HttpProvider
from providers.sse import Events
from providers.wire import as_count, as_obj, as_str, as_text, data_url, image_label, tool_call, with_tool_images


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
            detail = error_message(body)
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
            raw = as_obj(raw)
            function = as_obj(raw.get("function"))
            calls.append(_tool_call(raw.get("id"), function.get("name"), function.get("arguments"), index))
        return TurnResult(
            content=as_text(message.get("content")),
            tool_calls=calls,
            thinking=_thinking(as_text(message.get("reasoning_content") or message.get("reasoning"))),
            usage=_usage(body.get("usage")),
            finish_reason=as_str(choice.get("finish_reason")),
            model=as_str(body.get("model")),
        )

    # -- the call ------------------------------------------------------------

    async def _read_stream(self, source: EventSource, on_text: Callable[[str], None] | None) -> TurnResult:
        state = _StreamState()
        events = Events(source.response)
        with self._cut_offs(state):
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
        if not state.started:  # no chunk at all: whatever came is read as a plain answer
            return self._whole_answer("\n".join(events.stray), source.response.status_code, on_text)
        if not state.done and state.finish_reason is None:
            raise self._ended_early(state, "[DONE] or a finish_reason")
        return state.result()

    # -- errors --------------------------------------------------------------

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
        message = _message(body) or snippet(raw)
        if status is None:  # nothing says what it is: most likely the server's own trouble
            return self._error(message, retryable=True, kind=ErrorKind.API_ERROR, body=raw)
        return self._error(message, retryable=is_retryable_status(status), kind=kind_for_status(status),
                           status=status, body=raw)

    def _status_message(self, body: Any, fallback: str) -> str:
        return _message(body) or fallback


def _message(body: Any) -> str | None:
    """The server's message, with OpenAI's string error code when it adds something
    (``context_length_exceeded``, ``rate_limit_exceeded``)."""
    message = error_message(body)
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
        self.model = as_str(chunk.get("model")) or self.model
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
        choices = chunk.get("choices")
        choice = as_obj(choices[0]) if isinstance(choices, list) and choices else {}
        self.finish_reason = as_str(choice.get("finish_reason")) or self.finish_reason
        delta = as_obj(choice.get("delta"))
        reasoning = as_text(delta.get("reasoning_content") or delta.get("reasoning"))
        if reasoning:
            self._reasoning.append(reasoning)
        fragments = delta.get("tool_calls")
        for fragment in fragments if isinstance(fragments, list) else []:
            self._add_fragment(as_obj(fragment))
        text = as_text(delta.get("content"))
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
        function = as_obj(fragment.get("function"))
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
    """The conversation as chat messages, the images of tool results after them."""
    return with_tool_images(messages, lambda message: [_message_to_wire(message)], _tool_images_message)


def _tool_images_message(results: list[ChatMessage]) -> dict[str, Any]:
    """The user message that shows the images of tool results, each call named first."""
    content: list[dict[str, Any]] = []
    for result in results:
        content.append({"type": "text", "text": image_label(result)})
        content += [_image_part(image) for image in result.images]
    return {"role": "user", "content": content}


def _image_part(image: ImagePart) -> dict[str, Any]:
    """An ``image_url`` content part holding the image inline."""
    return {"type": "image_url", "image_url": {"url": data_url(image)}}


def _message_to_wire(message: ChatMessage) -> dict[str, Any]:
    match message.role:
        case "user":
            if message.images:  # a person's images, or tool results as text (XML path): text, then images
                text = [{"type": "text", "text": message.content}] if message.content else []
                return {"role": "user", "content": text + [_image_part(i) for i in message.images]}
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
    """One wire tool call, ``call_<index>`` when it came without an id."""
    return tool_call(as_str(call_id) or f"call_{index}", as_str(name) or "", arguments)


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    return Usage(
        input_tokens=as_count(raw.get("prompt_tokens")),
        output_tokens=as_count(raw.get("completion_tokens")),
        cache_read_tokens=as_count(as_obj(raw.get("prompt_tokens_details")).get("cached_tokens")),
    )
