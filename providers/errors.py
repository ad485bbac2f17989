"""Provider errors, classified once at the protocol boundary: a ``ProviderError`` has a kind
(``core.errors.ErrorKind``) and says whether a retry may help (429, 408, 409, 5xx, 529,
timeouts, connection errors and cut streams may; other 4xx, unreadable answers, a context
overflow and a model refusing images may not, whatever the status). Also here: the kind of
an HTTP status or of an error object in a body, a server's message and Retry-After, and the
log line of its whole answer. Adapters never retry: Temporal does (docs/providers.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import structlog

from core.errors import ErrorKind
from core.text import shorten

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})

# How servers say the request does not fit the model's context window:
_OVERFLOW = re.compile(
    r"context_length_exceeded"  # OpenAI's error code
    r"|maximum context length is \d+"  # OpenAI, vLLM: "This model's maximum context length is 4096 tokens"
    r"|prompt is too long"  # Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"
    r"|exceed(?:s|ed)? (?:the )?context (?:limit|window)"  # Anthropic: "... exceed context limit"
    r"|exceed_context_size_error|exceeds the available context size"  # llama.cpp server
    r"|context size has been exceeded"  # older llama.cpp
    r"|longer than the maximum model length"  # vLLM: "The decoder prompt (length N) is longer than ..."
    # Ollama: "the input length exceeds the context length" (older: "... maximum context length")
    r"|input length exceeds (?:the )?(?:maximum )?context length",
    re.IGNORECASE,
)


_STATED_WINDOW = re.compile(
    r"maximum context length is (\d+)"  # OpenAI, vLLM
    r"|> (\d+) maximum"  # Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"
    r"|maximum model length of (\d+)"  # vLLM
    r"|\bn_ctx\W+(\d+)"  # llama.cpp's error body: "n_ctx": 4096
    r"|context (?:size|length|window) (?:of |is )?(\d+)",
    re.IGNORECASE,
)


def stated_context_window(text: str) -> int | None:
    """The window a server's overflow error names, in tokens, if it names one."""
    match = _STATED_WINDOW.search(text)
    if match is None:
        return None
    return int(next(group for group in match.groups() if group))


def is_context_overflow(text: str) -> bool:
    """Whether an error text (message, code or body) says the request exceeds the window."""
    return bool(_OVERFLOW.search(text))


# How servers say the model takes no images. llama.cpp answers 500 (retryable by status),
# so without this a model wrongly marked "vision" would be retried until the task gave up.
_NO_IMAGES = re.compile(
    r"image input is not supported"  # llama.cpp without --mmproj
    r"|image_url is only supported by certain models",  # OpenAI, a text-only model
    re.IGNORECASE,
)
NO_IMAGES_HINT = ' (this model takes no images: set "vision": false for it in AGENT_MODELS_FILE)'


def refuses_images(text: str) -> bool:
    """Whether an error text says the model cannot take the images it was sent."""
    return bool(_NO_IMAGES.search(text))


class ProviderError(Exception):
    """``message`` is one line of at most ``SUMMARY_LIMIT`` characters (it is shown on every
    retry); ``body`` is the server's whole answer, for the worker log."""

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        retryable: bool,
        status: int | None = None,
        retry_after_s: float | None = None,
        kind: ErrorKind = ErrorKind.PROVIDER_ERROR,
        body: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.retryable = retryable
        self.status = status
        self.retry_after_s = retry_after_s
        self.kind = kind
        self.body = body

    def __str__(self) -> str:
        status = f" {self.status}" if self.status is not None else ""
        return f"{self.provider}{status}: {self.message}"


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or 500 <= status <= 599


def kind_for_status(status: int) -> ErrorKind:
    """The kind of an HTTP error status, shared by every adapter."""
    if status == 429:
        return ErrorKind.RATE_LIMITED
    if status == 529:
        return ErrorKind.OVERLOADED
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 404:
        return ErrorKind.NOT_FOUND
    if status == 408:
        return ErrorKind.TIMEOUT
    if status in (400, 422):
        return ErrorKind.BAD_REQUEST
    if status >= 500:
        return ErrorKind.SERVER_ERROR
    return ErrorKind.CLIENT_ERROR


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


# The HTTP status an error object in a body means, by its ``type`` or string ``code``, for
# errors that come without one (in a stream, or in a 200 answer): OpenAI, Anthropic, vLLM,
# llama.cpp and Ollama names. An integer ``code`` (vLLM, llama.cpp) is the status itself.
_STATUS_OF = {
    "invalid_request_error": 400, "BadRequestError": 400, "exceed_context_size_error": 400,
    "context_length_exceeded": 400, "invalid_value": 400, "missing_required_parameter": 400,
    "authentication_error": 401, "invalid_api_key": 401, "AuthenticationError": 401,
    "permission_error": 403, "PermissionDeniedError": 403,
    "not_found_error": 404, "NotFoundError": 404, "model_not_found": 404, "request_too_large": 413,
    "rate_limit_error": 429, "rate_limit_exceeded": 429, "RateLimitError": 429, "tokens": 429, "requests": 429,
    "server_error": 500, "api_error": 500, "InternalServerError": 500, "internal_error": 500,
    "not_supported_error": 501,
    "unavailable_error": 503, "ServiceUnavailableError": 503, "service_unavailable": 503,
    "timeout_error": 504, "overloaded_error": 529,
}


def status_in_body(error: object) -> int | None:
    """The HTTP status an error object names: its integer ``code`` (vLLM, llama.cpp), else
    what its ``code`` or ``type`` string means (OpenAI, Ollama); None when unknown."""
    if not isinstance(error, dict):
        return None
    code = error.get("code")
    if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599:
        return code
    if isinstance(code, str) and code.isdigit() and 100 <= int(code) <= 599:
        return int(code)
    for name in (code, error.get("type")):
        if isinstance(name, str) and name in _STATUS_OF:
            return _STATUS_OF[name]
    return None


SUMMARY_LIMIT = 300  # characters of a server's message kept in a ProviderError
# Bodies longer than this are cut in the log line (a server can answer with megabytes).
LOGGED_BODY_LIMIT = 20_000
# structlog as runtime.logs configures it (providers may not import runtime): the worker's
# processors, secret redaction included, apply to this logger too.
_log = structlog.get_logger("providers")


def summary(text: str) -> str:
    """One line of at most ``SUMMARY_LIMIT`` characters: servers put whole tracebacks and
    template dumps in their messages, and the message is shown on every retry."""
    return shorten(text, SUMMARY_LIMIT)


def log_body(err: ProviderError, url: str) -> None:
    """The server's whole answer (``err.body``, cut at LOGGED_BODY_LIMIT) in the worker log."""
    body = err.body or ""
    if len(body) > LOGGED_BODY_LIMIT:
        body = body[:LOGGED_BODY_LIMIT] + f"... [{len(body) - LOGGED_BODY_LIMIT} more characters]"
    _log.warning("provider error body", provider=err.provider, url=url, status=err.status, kind=err.kind,
                 retryable=err.retryable, error=err.message, body=body)


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
