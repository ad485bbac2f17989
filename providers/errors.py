"""Provider errors, classified once at the protocol boundary.

    ProviderError                 every failure a provider adapter raises
      retryable=True              429, 408, 409, 5xx, 529 (overloaded), timeouts,
                                  connection errors, a stream cut off mid-way
      retryable=False             400, 401, 403, 404, 422, and responses we cannot parse

Adapters never retry: the LLM activity turns a ProviderError into an
``ApplicationError`` and Temporal owns the retries, so every attempt is
visible in the workflow history.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from core.text import shorten

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


class ProviderError(Exception):
    def __init__(
        self,
        message: str,
        *,
        provider: str,
        retryable: bool,
        status: int | None = None,
        retry_after_s: float | None = None,
        kind: str = "provider_error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.retryable = retryable
        self.status = status
        self.retry_after_s = retry_after_s
        self.kind = kind

    def __str__(self) -> str:
        status = f" {self.status}" if self.status is not None else ""
        return f"{self.provider}{status}: {self.message}"


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or 500 <= status <= 599


def kind_for_status(status: int) -> str:
    """A short label for an HTTP error status, shared by every adapter."""
    if status == 429:
        return "rate_limited"
    if status == 529:
        return "overloaded"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status == 408:
        return "timeout"
    if status in (400, 422):
        return "bad_request"
    if status >= 500:
        return "server_error"
    return "client_error"


def error_message(body: object) -> str | None:
    """The human message of an error body: ``{"error": {"message": ...}}`` (OpenAI and
    Anthropic), ``{"error": "..."}`` or ``{"message": "..."}``."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(error, str):
        return error
    message = body.get("message")
    return message if isinstance(message, str) else None


def snippet(text: str, limit: int = 200) -> str:
    """Whitespace-collapsed start of a text, for error messages."""
    return shorten(text, limit, ellipsis="")


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    get = headers.get
    ms = get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now = now or datetime.now(UTC)
    return max(0.0, (when - now).total_seconds())
