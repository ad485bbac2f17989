"""What every HTTP provider adapter shares: one POST (plain or streamed), transport errors
mapped to ProviderError, the key kept out of error messages. Subclasses supply the three
parts that differ: ``to_wire``/``parse_response``, ``_read_stream`` and ``_status_error``.

Shared rules, streamed or not:
    empty 200 body               empty_response (retryable: a proxy or server glitch)
    truncated JSON 200 body      truncated_response (retryable)
    other unparseable 200 body   bad_response (not retryable)
    a server that ignores        its JSON answer is read as if not streamed
      ``stream``
    a stream with no event       asked once more, not streamed (llama-cpp-python refuses to
                                 stream a call that may use tools after its 200 and headers);
                                 calls with tools then go unstreamed to this endpoint, and the
                                 result's ``notice`` says so once; empty both ways is no
                                 outage: empty_response, not retryable
    no usage reported            estimated from the text (providers/usage.py), marked so
    a stream that starts, then   stream_stalled (retryable) after ``stream_idle_s`` (60 s,
      sends nothing              AGENT_STREAM_IDLE_S) without data; keep-alive comments do not
                                 count, the wait for the first data is not limited here
    a model refusing images      images_refused, not retryable, with a hint to fix the model
                                 table (llama.cpp answers it with a 500)
    every error                  a one-line message of at most 300 characters; the whole
                                 body goes to the worker log once, at warning level
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import structlog
from httpx_sse import EventSource, aconnect_sse

from core.errors import ErrorKind
from core.messages import LlmRequest, TurnResult
from providers.errors import (
    NO_IMAGES_HINT,
    ProviderError,
    is_context_overflow,
    refuses_images,
    snippet,
    summary,
)
from providers.netio import lean_client
from providers.sse import IdleGuard, StreamStalled
from providers.usage import request_text, with_estimate

# A provider's connections: POOL_SHARDS pools of at most SHARD_CONNECTIONS each (see _client).
POOL_SHARDS, SHARD_CONNECTIONS = 16, 8
# Bodies longer than this are cut in the log line (a server can answer with megabytes).
LOGGED_BODY_LIMIT = 20_000
# structlog as runtime.logs configures it (providers may not import runtime): the worker's
# processors, secret redaction included, apply to this logger too.
_log = structlog.get_logger("providers")


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
        """The next of the provider's connection pools (created on first use), in turn.

        Several small pools rather than one large one: httpcore matches every request against
        every connection its pool holds (asking each idle one whether it is still open) when the
        request starts and when its response closes, so the cost grows with requests in flight
        times connections. At 50 calls in flight (python -m benchmarks.http_pool): one pool of
        100 cost 7.6 to 8.5 ms of CPU per call; 16 pools of 8, 1.3 to 1.5 ms; the same on
        asyncio streams (providers/netio.py), 0.9 ms. Each pool keeps as many idle connections
        as it may open, so a busy worker reuses them rather than reconnecting (httpx keeps 20
        by default)."""
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
        raise NotImplementedError

    def _status_error(self, response: httpx.Response) -> ProviderError:
        raise NotImplementedError

    # -- the call ------------------------------------------------------------

    async def complete(
        self, req: LlmRequest, on_text: Callable[[str], None] | None = None
    ) -> TurnResult:
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

    def _failed(self, response: httpx.Response) -> ProviderError:
        """An HTTP error status, classified by the subclass; its whole body is logged."""
        err = self._status_error(response)
        err.body = self._redacted(response.text)
        self._log_body(err)
        return err

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
            self._log_body(err)
        return err

    def _redacted(self, text: str | None) -> str | None:
        if text is None or not self._api_key:
            return text
        return text.replace(self._api_key, "***")

    def _log_body(self, err: ProviderError) -> None:
        body = err.body or ""
        if len(body) > LOGGED_BODY_LIMIT:
            body = body[:LOGGED_BODY_LIMIT] + f"... [{len(body) - LOGGED_BODY_LIMIT} more characters]"
        _log.warning("provider error body", provider=self.name, url=self._url, status=err.status, kind=err.kind,
                     retryable=err.retryable, error=err.message, body=body)


def _cut_short(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether JSON failed to parse only because it ends too early: the parser ran out of
    text (inside a string, or where more was expected), as when an answer is cut off."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip())
