"""Why a model call failed: the one list of error kinds, on both sides of the LLM activity.

A provider adapter classifies each failure once (``providers.errors.ProviderError.kind``);
the activity raises it as the ``ApplicationError`` type, and the workflow compares that
type with the same members. A ``StrEnum``, so the value on the wire is the plain string.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorKind(StrEnum):
    # By HTTP status (providers.errors.kind_for_status)
    RATE_LIMITED = "rate_limited"  # 429
    OVERLOADED = "overloaded"  # 529, Anthropic's overloaded_error
    AUTH = "auth"  # 401, 403
    NOT_FOUND = "not_found"  # 404
    TIMEOUT = "timeout"  # 408, or the request timed out
    BAD_REQUEST = "bad_request"  # 400, 422
    SERVER_ERROR = "server_error"  # 5xx
    CLIENT_ERROR = "client_error"  # any other 4xx
    # By what the answer said, or failed to say
    # The request is longer than the model's window; the activity's ApplicationError carries
    # the window the server named, if any, as details: {"context_window": N | None}.
    CONTEXT_OVERFLOW = "context_overflow"
    IMAGES_REFUSED = "images_refused"  # the model takes no images, but was sent some
    EMPTY_RESPONSE = "empty_response"  # a 2xx answer with nothing in it (body or stream)
    TRUNCATED_RESPONSE = "truncated_response"  # a 2xx JSON body cut short
    BAD_RESPONSE = "bad_response"  # a 2xx answer we cannot read
    API_ERROR = "api_error"  # an error object in a 200 answer that names no known status
    STREAM_ERROR = "stream_error"  # the same, in a stream
    STREAM_CUT = "stream_cut"  # a stream that ended, or broke, before its last event
    STREAM_STALLED = "stream_stalled"  # a stream that went quiet for too long
    CONNECTION = "connection"  # the connection failed
    UNEXPECTED = "unexpected"  # anything else an adapter ran into
    PROVIDER_ERROR = "provider_error"  # a ProviderError that names no kind
    # Raised by the LLM activity itself
    CONTEXT_GAP = "ContextGap"  # the store lacks entries: the workflow resends them in full
    CIRCUIT_OPEN = "circuit_open"  # the endpoint failed too often lately: not called
    CONFIG_ERROR = "ConfigError"  # the worker cannot make this call (provider, tool list)
