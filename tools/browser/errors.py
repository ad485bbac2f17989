"""Playwright's errors in one line, for the model and the log.

Playwright's messages carry a call log after their first line. ``first_line`` keeps the
message alone (a launch, a route, a render that failed); ``brief`` adds the log's last
step, which says why an action failed. ``is_timeout`` tells a page that was only slow
(what it has so far is still worth showing) from one that failed.
"""

from __future__ import annotations


def first_line(exc: BaseException) -> str:
    """An exception's message, first line only (playwright appends a call log)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def brief(exc: BaseException) -> str:
    """A playwright error in one line: its message, and the last step of its call log (which
    says why: "element is not visible", "<div> intercepts pointer events")."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    steps = [line.removeprefix("- ").strip() for line in lines[1:] if line.startswith("- ")]
    return f"{lines[0]} ({steps[-1]})" if steps else lines[0]


def is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or type(exc).__name__ == "TimeoutError"


__all__ = ["brief", "first_line", "is_timeout"]
