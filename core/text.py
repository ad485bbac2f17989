"""Text helpers used across layers: one way to shorten a string for a line of output."""

from __future__ import annotations


def shorten(text: str, limit: int, *, flat: bool = True, ellipsis: str = "…") -> str:
    """``text`` cut to ``limit`` characters with ``ellipsis`` at the end when it was longer;
    ``flat`` first joins its whitespace runs into single spaces, for one-line output."""
    if flat:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - len(ellipsis)] + ellipsis
