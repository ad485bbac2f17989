"""Text shown exactly where a renderer reads Markdown (the Temporal UI's summary and details).

A command like ``rm -rf logs/__old__ && git push --force origin main`` rendered as Markdown
reads ``rm -rf logs/**old** && git push –force origin main``: what a person approves must
be what runs. So such text goes inside code, which Markdown shows as it is: a fenced block
(or a code span on one line) whose fence is a run of backticks longer than any in the text,
so the text cannot close it. Characters a page would hide or reorder (control and format
characters such as bidi overrides and zero-width spaces, spaces other than U+0020) are shown
as ``⟨U+202E⟩``: a person sees that they are there.
"""

from __future__ import annotations

import re
import unicodedata

_BACKTICKS = re.compile(r"`+")
_KEPT = "\n\t "  # whitespace a code block shows as it is
_HIDDEN_CATEGORIES = ("Cc", "Cf", "Zl", "Zp", "Zs")


def visible(text: str) -> str:
    """``text`` with each character a page would not show as itself written as ``⟨U+XXXX⟩``."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        f"⟨U+{ord(c):04X}⟩" if c not in _KEPT and unicodedata.category(c) in _HIDDEN_CATEGORIES else c
        for c in text
    )


def _fence(text: str, least: int) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(least, longest + 1)


def code_block(text: str) -> str:
    """A fenced code block that renders as exactly ``text`` (newlines kept)."""
    body = visible(text)
    fence = _fence(body, 3)
    return f"{fence}\n{body}\n{fence}"


def code_span(text: str) -> str:
    """An inline code span that renders as ``text`` on one line, each run of whitespace one
    space (as the page shows it anyway)."""
    body = " ".join(visible(text).split())
    if not body:
        return ""
    # A backtick at an end would join the fence: a space each side, which the renderer drops.
    if body.startswith("`") or body.endswith("`"):
        body = f" {body} "
    fence = _fence(body, 1)
    return f"{fence}{body}{fence}"
