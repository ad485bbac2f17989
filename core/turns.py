"""The turn grouper (seed 000): the flat transcript cut into the units compaction keeps or drops.

A turn is what must stay together for a provider to accept the history: an
assistant tool call with every result that answers it. Compaction and the
window guard keep or remove whole turns, never single entries, so a
``tool_use`` is never left without its ``tool_result``.

Rules, applied left to right:

- a UserMessage starts a "user" turn;
- an AiMessage starts an "assistant" turn;
- a ToolCall starts a "tool" turn that lasts at least until the last
  ToolResult answering one of its calls (matched by call id, in any order,
  deferred results included). Whatever lies in between belongs to the turn,
  so no cut can fall between a call and its result;
- a SystemReminder joins a preceding "tool", "assistant" or "reminder" turn
  (the loop warning, the no-tool-call reminder); anywhere else (at the start,
  after a user message) it starts a "reminder" turn;
- a StatusNotice joins the turn it follows, or starts a "notice" turn;
- an orphan ToolResult (no unanswered call with its id before it) joins the
  preceding turn, or starts a "tool" turn at the start.

Concatenating the turns' entries gives back the input, entry for entry.
Call ids may repeat across turns (some providers number calls per reply), so
a result is matched to the newest earlier call with that id still waiting.

Pure and deterministic: no I/O, no clocks.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, assert_never

from core.entries import (
    AiMessage,
    Entry,
    StatusNotice,
    SystemReminder,
    ToolCall,
    ToolResult,
    UserMessage,
)
from core.messages import ToolCallRequest, thinking_text

TurnKind = Literal["user", "tool", "assistant", "reminder", "notice"]

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4  # role markers and separators around each message
REMINDER_WRAP_CHARS = len("<system-reminder></system-reminder>")
_JOINS_REMINDER = frozenset({"tool", "assistant", "reminder"})
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(slots=True)
class Turn:
    """Entries that are kept or removed together; ``kind`` names the entry that opened it."""

    entries: list[Entry]
    kind: TurnKind


def group_turns(entries: Sequence[Entry]) -> list[Turn]:
    """Cut ``entries`` into turns; see the module docstring for the rules."""
    return grouped(entries)[0]


def grouped(entries: Sequence[Entry]) -> tuple[list[Turn], int]:
    """The turns, and how many of the first ones entries appended later cannot change: those
    before the turn of the oldest call still waiting for a result, and never the last one
    (what comes next may join it). Grouping the entries from the end of those on gives the
    same turns as grouping them all: no result still due reaches back past them."""
    last_result, waiting = _last_results(entries)
    turns: list[Turn] = []
    open_until = -1  # index of the last result the open tool turn still waits for
    for index, entry in enumerate(entries):
        current = turns[-1] if turns else None
        kind = None if current is not None and index <= open_until else _opens(entry, current)
        if kind is None:
            assert current is not None
            current.entries.append(entry)
        else:
            turns.append(Turn([entry], kind))
        if isinstance(entry, ToolCall):
            open_until = max(open_until, last_result.get(index, index))
    oldest_waiting = min((owner for owner, _ in waiting.values()), default=len(entries))
    settled, start = 0, 0
    for turn in turns[:-1]:
        start += len(turn.entries)
        if start > oldest_waiting:
            break
        settled += 1
    return turns, settled


def _opens(entry: Entry, current: Turn | None) -> TurnKind | None:
    """The kind of turn ``entry`` starts, or None if it joins ``current``."""
    match entry:
        case UserMessage():
            return "user"
        case AiMessage():
            return "assistant"
        case ToolCall():
            return "tool"
        case ToolResult():
            return None if current is not None else "tool"
        case SystemReminder():
            return None if current is not None and current.kind in _JOINS_REMINDER else "reminder"
        case StatusNotice():
            return None if current is not None else "notice"
        case _:
            assert_never(entry)


def _last_results(entries: Sequence[Entry]) -> tuple[dict[int, int], dict[str, tuple[int, int]]]:
    """For each ToolCall's index, the index of the last ToolResult answering one of its calls;
    and the calls still waiting at the end (call id -> its ToolCall's index, results due)."""
    waiting: dict[str, tuple[int, int]] = {}  # call id -> (ToolCall index, results still due)
    last: dict[int, int] = {}
    for index, entry in enumerate(entries):
        if isinstance(entry, ToolCall):
            for call in entry.calls:
                owner, due = waiting.get(call.id, (-1, 0))
                waiting[call.id] = (index, due + 1 if owner == index else 1)
        elif isinstance(entry, ToolResult):
            hit = waiting.get(entry.call_id)
            if hit is None:
                continue  # an orphan
            owner, due = hit
            last[owner] = index
            if due == 1:
                del waiting[entry.call_id]
            else:
                waiting[entry.call_id] = (owner, due - 1)
    return last, waiting


# --- token estimates ----------------------------------------------------------


def estimate_tokens(entry: Entry) -> int:
    """About what ``entry`` costs in the model's view: 4 characters a token plus overhead.

    Counts the text the model sees (text, thinking, call ids, names and JSON
    arguments, result content). A StatusNotice is not sent, so it costs 0.
    """
    match entry:  # the commonest kinds first: this runs for every entry on every LLM call
        case ToolResult():
            chars = len(entry.content) + len(entry.name) + len(entry.call_id)
        case ToolCall():
            chars = len(entry.text) + len(thinking_text(entry.thinking))
            for call in entry.calls:
                chars += len(call.id) + len(call.name) + _arguments_chars(call)
        case SystemReminder():
            chars = len(entry.text) + REMINDER_WRAP_CHARS
        case UserMessage():
            chars = len(entry.text)
        case AiMessage():
            chars = len(entry.text) + len(thinking_text(entry.thinking))
        case StatusNotice():
            return 0
        case _:
            assert_never(entry)
    return -(-chars // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS


def estimate_turn_tokens(turn: Turn) -> int:
    return sum(estimate_tokens(entry) for entry in turn.entries)


def _arguments_chars(call: ToolCallRequest) -> int:
    """Length of the arguments as sent back to the provider (the raw text if it was not JSON)."""
    if call.parse_error and call.arguments_raw is not None:
        return len(call.arguments_raw)
    return len(_JSON.encode(call.arguments))
