"""Turn summaries: the one-line records of the turns compaction takes out of full view, and the
``<compacted_history>`` block that holds them (``core/compaction.py`` decides which turns go).

Why a module of its own: what a summary line says (``compact_line``, also used by the tool
registry) and how the block counts its cost are a format; which turns to keep and the window
guard are policy. Pure and deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from core.entries import AiMessage, Entry, SystemReminder, ToolCall, ToolResult, UserMessage
from core.text import shorten
from core.turns import CHARS_PER_TOKEN, MESSAGE_OVERHEAD_TOKENS, REMINDER_WRAP_CHARS, Turn

COMPACT_VALUE_CHARS = 80
TEXT_PREVIEW_CHARS = 200

_BLOCK_CLOSE = "</compacted_history>"


class SummaryBlock:
    """One summary per turn (a line, several, or none for a notice), oldest first, with its cost
    kept in step so the window guard never rebuilds the text."""

    def __init__(self) -> None:
        self.summaries: list[str] = []
        self.omitted = 0  # oldest summaries left out by the window guard
        self._lines = 0  # visible non-empty summaries
        self._body_chars = 0  # their characters, a newline each

    @property
    def present(self) -> bool:
        return self._lines > 0

    def add(self, summary: str) -> None:
        self.summaries.append(summary)
        if summary:
            self._lines += 1
            self._body_chars += len(summary) + 1

    def _opening_tag(self) -> str:
        count = len(self.summaries) - self.omitted
        omitted = f' omitted="{self.omitted}"' if self.omitted else ""
        return f'<compacted_history turns="{count}"{omitted}>'

    def text(self) -> str:
        lines = [s for s in self.summaries[self.omitted :] if s]
        return "\n".join([self._opening_tag(), *lines, _BLOCK_CLOSE])

    def tokens(self) -> int:
        """What ``estimate_tokens`` gives for the block's SystemReminder, without building it."""
        if not self.present:
            return 0
        chars = len(self._opening_tag()) + 1 + self._body_chars + len(_BLOCK_CLOSE)
        return -(-(chars + REMINDER_WRAP_CHARS) // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS

    def shed(self, room: float) -> None:
        """Leave out the oldest summaries until the block costs at most ``room`` (or is gone)."""
        while self.present and self.tokens() > room:
            summary = self.summaries[self.omitted]
            self.omitted += 1
            if summary:
                self._lines -= 1
                self._body_chars -= len(summary) + 1


def turn_summary(turn: Turn, keys: Mapping[str, tuple[str, ...]]) -> str:
    """The turn's line: its opening entry, plus any message that stayed open inside it."""
    lines: list[str] = []
    for position, entry in enumerate(turn.entries):
        match entry:
            case ToolCall() if entry.calls:
                for call in entry.calls:  # those that ran: the reply's reads together, one other call
                    status = _result_status(turn.entries, position, call.id)
                    if status == "deferred":
                        continue
                    if call.name in keys or not call.summary:
                        lines.append(_tool_line(call.name, call.arguments, status, keys.get(call.name, ())))
                    else:  # a tool this caller knows no keys for: its recorded one-line summary names it
                        lines.append(_tool_line(call.name, {"call": call.summary}, status, ("call",)))
            case ToolCall() | AiMessage() if entry.text:
                lines.append(_text_line("assistant", entry.text))
            case UserMessage():
                lines.append(_text_line("user", entry.text))
            case SystemReminder() if turn.kind == "reminder":
                lines.append(f"<reminder reason={quoteattr(entry.reason)}/>")
            case ToolResult() if position == 0:
                lines.append(compact_line(entry.name, {}, entry.status))
            case _:
                pass
    return "\n".join(lines)


def compact_line(
    name: str, arguments: dict[str, Any], result_status: str | None = None, keys: Sequence[str] = ()
) -> str:
    """One line of XML naming a call by ``keys`` of its arguments, e.g.
    ``<tool name="file" action="read" path="a.txt"/>``."""
    attrs = [("name", name)]
    for key in keys:
        value = arguments.get(key) if isinstance(arguments, dict) else None
        if value is not None:
            text = value if isinstance(value, str) else json.dumps(value)
            attrs.append((key, shorten(text, COMPACT_VALUE_CHARS, flat=False)))
    if result_status is not None:
        attrs.append(("status", result_status))
    return "<tool " + " ".join(f"{k}={quoteattr(v)}" for k, v in attrs) + "/>"


def _tool_line(name: str, arguments: dict[str, Any], status: str | None, keys: tuple[str, ...]) -> str:
    """``compact_line``, memoized on what it reads when that is all text.

    Once a transcript is long, every LLM call re-summarizes the same turns, and
    formatting the lines was most of the cost. Only strings and None go in the
    key (True == 1 would share a line with 1), so the output never depends on
    what was cached before.
    """
    shown = tuple((key, arguments.get(key)) for key in keys)
    if all(value is None or type(value) is str for _, value in shown):
        return _cached_tool_line(name, shown, status)
    return compact_line(name, arguments, status, keys)


@lru_cache(maxsize=4096)
def _cached_tool_line(name: str, shown: tuple[tuple[str, str | None], ...], status: str | None) -> str:
    return compact_line(name, dict(shown), status, [key for key, _ in shown])


def _result_status(entries: list[Entry], after: int, call_id: str) -> str | None:
    for entry in entries[after + 1 :]:
        if isinstance(entry, ToolResult) and entry.call_id == call_id:
            return entry.status
    return None


def _text_line(tag: str, text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) > TEXT_PREVIEW_CHARS:
        flat = flat[:TEXT_PREVIEW_CHARS] + "…"
    return f"<{tag}>{escape(flat)}</{tag}>"
