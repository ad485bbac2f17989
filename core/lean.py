"""Fields left out of a model's JSON while they hold their default value.

Temporal records every activity input and result in the history, every turn. A field that
is almost always null, zero or empty (a tool call's parse error, a result's blob, a usage's
cache counts) would cost its name and value in every event; left out, it costs nothing, and
reading the JSON back gives the same default, so nothing is lost. Only for defaults that
are immutable values (None, numbers, booleans, strings) or empty containers.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field


def omitted(default: Any = None, **kwargs: Any) -> Any:
    """A field with this default, left out of the JSON while it equals it."""
    if isinstance(default, list | dict | set):
        raise TypeError("use omitted_empty for containers")
    if default is None:
        return Field(default=None, exclude_if=_is_none, **kwargs)
    return Field(default=default, exclude_if=lambda value: type(value) is type(default) and value == default, **kwargs)


def omitted_empty(factory: type[list] | type[dict], **kwargs: Any) -> Any:
    """A list or dict field, empty by default, left out of the JSON while it is empty."""
    return Field(default_factory=factory, exclude_if=_is_empty, **kwargs)


def _is_none(value: Any) -> bool:
    return value is None


def _is_empty(value: Any) -> bool:
    return isinstance(value, list | dict) and not value
