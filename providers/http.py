"""What every HTTP provider adapter shares: one POST (plain or streamed), transport errors
mapped to ProviderError, the key kept out of error messages. Subclasses supply the three
parts that differ: ``to_wire``/``parse_response``, ``_complete_stream`` and ``_status_error``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from httpx_sse import EventSource, aconnect_sse

from core.messages import LlmRequest, TurnResult
from providers.errors import ProviderError, snippet


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
    ) -> None:
        self._url = base_url.rstrip("/") + self.path
        self._api_key = api_key or None
        self._timeout = httpx.Timeout(timeout_s)
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient(timeout=self._timeout)

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
        body = self.to_wire(req)
        try:
            if req.stream:
                return await self._complete_stream(body, on_text)
            return await self._complete_once(body)
        except ProviderError:
            raise
        except httpx.TimeoutException as exc:
            message = f"request timed out ({type(exc).__name__})"
            raise self._error(message, retryable=True, kind="timeout") from exc
        except httpx.TransportError as exc:
            message = f"connection failed: {type(exc).__name__}: {exc}"
            raise self._error(message, retryable=True, kind="connection") from exc
        except Exception as exc:  # the contract: nothing but ProviderError leaves complete()
            message = f"unexpected failure: {type(exc).__name__}: {exc}"
            raise self._error(message, retryable=False, kind="unexpected") from exc

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def _complete_once(self, body: dict[str, Any]) -> TurnResult:
        response = await self._client.post(self._url, json=body, headers=self._headers(), timeout=self._timeout)
        if response.status_code >= 400:
            raise self._status_error(response)
        return self.parse_response(self._json_body(response))

    async def _complete_stream(self, body: dict[str, Any], on_text: Callable[[str], None] | None) -> TurnResult:
        async with aconnect_sse(
            self._client, "POST", self._url, json=body, headers=self._headers(), timeout=self._timeout
        ) as source:
            response = source.response
            if response.status_code >= 400:
                await response.aread()
                raise self._status_error(response)
            if "text/event-stream" not in response.headers.get("content-type", ""):
                # A server that ignores `stream`: take the whole answer, show its text at once.
                await response.aread()
                result = self.parse_response(self._json_body(response))
                if on_text is not None and result.content:
                    on_text(result.content)
                return result
            return await self._read_stream(source, on_text)

    def _json_body(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            raise self._bad_response(
                f"response body is not valid JSON (HTTP {response.status_code}): {snippet(response.text)}"
            ) from None

    def _bad_response(self, message: str) -> ProviderError:
        return self._error(message, retryable=False, kind="bad_response")

    def _error(self, message: str, **kwargs: Any) -> ProviderError:
        if self._api_key:
            message = message.replace(self._api_key, "***")
        return ProviderError(message, provider=self.name, **kwargs)
