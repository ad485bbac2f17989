"""What every HTTP provider adapter shares: one POST (plain or streamed), transport errors
mapped to ProviderError, the key kept out of error messages, the rules for empty, cut-off
and unreadable answers, an HTTP error status classified. A subclass supplies what differs:
``to_wire``/``parse_response`` and ``_read_stream``, and where its wire says more than the
status does, ``_status_kind``/``_status_message``. The rules: docs/providers.md."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import httpx
from httpx_sse import EventSource, aconnect_sse

from core.errors import ErrorKind
from core.messages import LlmRequest, TurnResult
from providers.errors import (
    NO_IMAGES_HINT,
    ProviderError,
    error_message,
    is_context_overflow,
    is_retryable_status,
    kind_for_status,
    log_body,
    parse_retry_after,
    refuses_images,
    snippet,
    summary,
)
from providers.netio import lean_client
from providers.sse import IdleGuard, StreamStalled
from providers.usage import request_text, with_estimate

# A provider's connections: POOL_SHARDS pools of at most SHARD_CONNECTIONS each (see _client).
POOL_SHARDS, SHARD_CONNECTIONS = 16, 8


class Folding(Protocol):
    """What a wire's stream state says while it folds events: whether any has come yet."""

    started: bool


class HttpProvider:
    name = ""
    path = ""  # appended to the base URL

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        client: httpx.AsyncClient | None = None,
        timeout_s: float = 600.0,
        stream_idle_s: float = 60.0,
    ) -> None:
        self._url = base_url.rstrip("/") + self.path
        self._idle_s = stream_idle_s
        self._api_key = api_key or None
        self._timeout = httpx.Timeout(timeout_s)
        self._owns_client = client is None
        self._shards: list[httpx.AsyncClient | None] = [client] if client is not None else [None] * POOL_SHARDS
        # Per shard, its transport when a request may go straight to it (see netio.lean_client).
        self._transports: list[httpx.AsyncHTTPTransport | None] = [None] * len(self._shards)
        self._turn = 0
        self._ssl: Any = None
        # Learned: this endpoint answers a streamed call with tools with an empty stream.
        self._unstreamed_tools = False

    def _client(self) -> httpx.AsyncClient:
        """The next of the provider's connection pools (created on first use), in turn: several
        small pools cost far less CPU than one large one (docs/providers.md, Connections)."""
        self._turn = (self._turn + 1) % len(self._shards)
        client = self._shards[self._turn]
        if client is None:
            if self._ssl is None:  # one TLS context for all of them (each costs a CA bundle load)
                self._ssl = httpx.create_ssl_context()
            client, self._transports[self._turn] = lean_client(self._timeout, self._ssl, SHARD_CONNECTIONS)
            self._shards[self._turn] = client
        return client

    # -- what a subclass supplies -------------------------------------------

    def to_wire(self, req: LlmRequest) -> dict[str, Any]:
        raise NotImplementedError

    def parse_response(self, body: Any) -> TurnResult:
        raise NotImplementedError

    async def _read_stream(self, source: EventSource, on_text: Callable[[str], None] | None) -> TurnResult:
        """Read the SSE events of a streamed answer into a TurnResult."""
        raise NotImplementedError

    def _headers(self) -> dict[str, str]:
        """The key as a bearer token (the OpenAI wires)."""
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _status_kind(self, status: int, body: Any) -> tuple[ErrorKind, bool]:
        """An HTTP error status's kind, and whether it is retryable; ``body`` is JSON or None."""
        return kind_for_status(status), is_retryable_status(status)

    def _status_message(self, body: Any, fallback: str) -> str:
        """The message of an HTTP error: the body's (JSON or None), else ``fallback``."""
        return error_message(body) or fallback

    # -- the call ------------------------------------------------------------

    async def complete(self, req: LlmRequest, on_text: Callable[[str], None] | None = None) -> TurnResult:
        """One model call. Raises ProviderError and nothing else."""
        streamed = req.stream and not (req.tools and self._unstreamed_tools)
        body = self.to_wire(req if streamed == req.stream else req.model_copy(update={"stream": False}))
        try:
            if not streamed:
                result = await self._complete_once(body)
            else:
                try:
                    result = await self._complete_stream(body, on_text)
                except ProviderError as err:
                    if err.kind != ErrorKind.EMPTY_RESPONSE:
                        raise
                    body = self.to_wire(req.model_copy(update={"stream": False}))
                    result = await self._unstreamed(body, bool(req.tools), on_text)
            if not (result.usage.input_tokens and result.usage.output_tokens):  # the server did not say
                result = with_estimate(result, request_text(body))
            return result
        except ProviderError:
            raise
        except StreamStalled as exc:
            raise self._error(str(exc), retryable=True, kind=ErrorKind.STREAM_STALLED) from None
        except httpx.TimeoutException as exc:
            message = f"request timed out ({type(exc).__name__})"
            raise self._error(message, retryable=True, kind=ErrorKind.TIMEOUT) from exc
        except httpx.TransportError as exc:
            message = f"connection failed: {type(exc).__name__}: {exc}"
            raise self._error(message, retryable=True, kind=ErrorKind.CONNECTION) from exc
        except Exception as exc:  # the contract: nothing but ProviderError leaves complete()
            message = f"unexpected failure: {type(exc).__name__}: {exc}"
            raise self._error(message, retryable=False, kind=ErrorKind.UNEXPECTED) from exc

    async def _unstreamed(self, body: dict[str, Any], tools: bool, on_text: Callable[[str], None] | None) -> TurnResult:
        """A streamed call answered with no event at all, asked once more without streaming.
        An answer: calls with tools go unstreamed from now on (when this one had tools), and
        the result says so once. Empty again: the server has nothing to give for this request,
        which waiting will not change."""
        try:
            result = await self._complete_once(body)
        except ProviderError as err:
            if err.kind != ErrorKind.EMPTY_RESPONSE:
                raise
            raise self._error(
                "the server answered this request with nothing, streamed and not streamed: check the "
                "server's log (a chat template or tool-call handler that fails on this request?)",
                retryable=False, kind=ErrorKind.EMPTY_RESPONSE,
            ) from None
        if tools and not self._unstreamed_tools:
            self._unstreamed_tools = True
            result.notice = (f"{self._url} sent an empty stream for a call with tools and answered it unstreamed: "
                             "this worker asks it for whole answers when tools are offered")
        if on_text is not None and result.content:
            on_text(result.content)
        return result

    async def aclose(self) -> None:
        if self._owns_client:
            for client in self._shards:
                if client is not None:
                    await client.aclose()

    async def _complete_once(self, body: dict[str, Any]) -> TurnResult:
        client = self._client()
        request = client.build_request("POST", self._url, json=body, headers=self._headers(), timeout=self._timeout)
        transport = self._transports[self._turn]
        if transport is None:
            response = await client.send(request)
        else:  # past the client's auth, cookie and redirect layers, which a provider never uses
            response = await transport.handle_async_request(request)
            response.request = request
            try:
                await response.aread()
            finally:
                await response.aclose()
        if response.status_code >= 400:
            raise self._failed(response)
        return self._parse_body(response.text, response.status_code)

    async def _complete_stream(self, body: dict[str, Any], on_text: Callable[[str], None] | None) -> TurnResult:
        async with aconnect_sse(
            self._client(), "POST", self._url, json=body, headers=self._headers(), timeout=self._timeout
        ) as source:
            response = source.response
            if response.status_code >= 400:
                await response.aread()
                raise self._failed(response)
            response.stream = IdleGuard(response.stream, self._idle_s)
            if "text/event-stream" not in response.headers.get("content-type", ""):
                # A server that ignores `stream`: take the whole answer, show its text at once.
                await response.aread()
                return self._whole_answer(response.text, response.status_code, on_text)
            return await self._read_stream(source, on_text)

    def _whole_answer(self, text: str, status: int, on_text: Callable[[str], None] | None) -> TurnResult:
        """A streamed request answered in one piece: read as if it had not been streamed."""
        result = self._parse_body(text, status)
        if on_text is not None and result.content:
            on_text(result.content)
        return result

    def _parse_body(self, text: str, status: int = 200) -> TurnResult:
        """A 2xx answer's body. Empty or cut short is transient (a proxy glitch, a server
        restarting): retryable. Anything else that is not JSON is not."""
        if not text.strip():
            raise self._error(f"empty response body (HTTP {status})", retryable=True, kind=ErrorKind.EMPTY_RESPONSE)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if _cut_short(text, exc):
                message = f"response body cut short (HTTP {status}, {len(text)} characters): {snippet(text)}"
                raise self._error(message, retryable=True, kind=ErrorKind.TRUNCATED_RESPONSE, body=text) from None
            message = f"response body is not valid JSON (HTTP {status}): {snippet(text)}"
            raise self._error(message, retryable=False, kind=ErrorKind.BAD_RESPONSE, body=text) from None
        return self.parse_response(data)


    @contextmanager
    def _cut_offs(self, state: Folding) -> Iterator[None]:
        """Around a stream's events: a connection that breaks once events came is a cut stream
        (retryable); a timeout, or a break before the first event, is the call's to report."""
        try:
            yield
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.TimeoutException) or not state.started:
                raise
            raise self._error(f"stream cut off: {type(exc).__name__}: {exc}", retryable=True,
                              kind=ErrorKind.STREAM_CUT) from exc

    def _ended_early(self, state: Folding, last: str) -> ProviderError:
        """A stream that ended before ``last``: empty if it sent no event, else cut."""
        if not state.started:
            return self._error("empty stream: it ended before its first event", retryable=True,
                               kind=ErrorKind.EMPTY_RESPONSE)
        return self._error(f"stream ended without {last}", retryable=True, kind=ErrorKind.STREAM_CUT)

    def _failed(self, response: httpx.Response) -> ProviderError:
        """An HTTP error status, with the body's message (else its start, else the status line)
        and the server's Retry-After; its whole body is logged."""
        status = response.status_code
        try:
            body = response.json()
        except ValueError:
            body = None
        kind, retryable = self._status_kind(status, body)
        fallback = snippet(response.text) or f"HTTP {status} {response.reason_phrase}".strip()
        return self._error(self._status_message(body, fallback), retryable=retryable, kind=kind, status=status,
                           retry_after_s=parse_retry_after(response.headers), body=response.text)

    def _bad_response(self, message: str) -> ProviderError:
        return self._error(message, retryable=False, kind=ErrorKind.BAD_RESPONSE)

    def _stream_json(self, data: str, what: str = "stream event") -> dict[str, Any]:
        """One SSE data line as the JSON object every wire sends there; a bad response if not."""
        try:
            event = json.loads(data)
        except ValueError:
            raise self._bad_response(f"{what} is not valid JSON: {snippet(data)}") from None
        if not isinstance(event, dict):
            raise self._bad_response(f"{what} is not a JSON object: {snippet(data)}")
        return event

    def _error(self, message: str, *, body: str | None = None, **kwargs: Any) -> ProviderError:
        """Every ProviderError of an adapter: the key redacted, a context overflow recognised
        in the full text, the message cut to one line; ``body`` (the server's answer) logged."""
        if self._api_key:
            message = message.replace(self._api_key, "***")
        if is_context_overflow(message):  # in any shape, streamed or not: the engine compacts
            kwargs.update(kind=ErrorKind.CONTEXT_OVERFLOW, retryable=False)
        elif refuses_images(message):  # retrying cannot help: the model table is wrong
            kwargs.update(kind=ErrorKind.IMAGES_REFUSED, retryable=False)
            message += NO_IMAGES_HINT
        err = ProviderError(summary(message), provider=self.name, body=self._redacted(body), **kwargs)
        if body is not None:
            log_body(err, self._url)
        return err

    def _redacted(self, text: str | None) -> str | None:
        if text is None or not self._api_key:
            return text
        return text.replace(self._api_key, "***")


def _cut_short(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether JSON failed to parse only because it ends too early: the parser ran out of
    text (inside a string, or where more was expected), as when an answer is cut off."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip())
