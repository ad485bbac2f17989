"""Context compaction (seed 000): the model's view of a transcript that has grown too long.

``compact(entries, policy)`` returns what the model should see; the
transcript is never changed (entries that differ in the view are copies).
Under ``threshold`` of the window the entries are returned as they are.
Above it:

1. The entries are grouped into turns (``core.turns``). Everything is
   kept or removed by whole turns, so tool calls stay paired with results.
2. Tool results whose content alone is over ``max_result_tokens`` are cut to
   their head and tail with a note telling the model how to see the rest.
3. The first user turn (the original request) is kept in full, and so are
   the newest turns that fit in ``tail_fraction`` of the window (at least
   the newest one). Every turn in between becomes one line of a
   ``<compacted_history>`` block, a SystemReminder placed after the request:
   ``compact_line`` of the executed call with its result's status for a tool
   turn (deferred calls were never run and are left out: the model may call
   them again), ``<user>``/``<assistant>`` with the first 200 characters of
   the text, ``<reminder reason=".."/>`` for a reminder on its own. Status
   notices give no line. Turns before the first user message (only notices
   or reminders in practice) are summarized in the same block.
4. Window guard: the request and the kept turns come first. While they alone
   are over ``guard_fraction`` of the window, the oldest kept turns after the
   request are removed (never the request, never the newest turn) and their
   line is appended to the block; then the block's oldest lines go (counted in
   its ``omitted`` attribute) until it fits in what is left, and last the block
   itself. So a task of thousands of turns still shows its recent turns in full,
   and as many of the older lines as there is room for.

The lines and the block are ``core/turn_summary.py``'s; this module picks the turns.
The block is rebuilt from the transcript on every call; nothing the model
sees comes from a summary written by a model. Pure and deterministic.

A long task's worker compacts the same old turns on every call: a ``CompactionMemo``
passed in keeps each entry's cost and each summarized turn's line between one task's
calls (the same view, far less work: a 10,000-turn transcript's costs and lines are most
of a call's time).
"""

from __future__ import annotations

import math
import operator
from bisect import bisect_right
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from core.entries import Entry, SystemReminder, ToolResult, UserMessage
from core.turn_summary import COMPACT_VALUE_CHARS as COMPACT_VALUE_CHARS
from core.turn_summary import TEXT_PREVIEW_CHARS as TEXT_PREVIEW_CHARS
from core.turn_summary import SummaryBlock, turn_summary
from core.turn_summary import _cached_tool_line as _cached_tool_line
from core.turn_summary import compact_line as compact_line
from core.turns import CHARS_PER_TOKEN, Turn, estimate_tokens, group_turns, grouped

COMPACTED_REASON = "compacted_history"
TRUNCATION_NOTE = (
    "[... truncated {n} characters for the context window; "
    "re-run the tool with narrower arguments to see it ...]"
)


class CompactionPolicy(BaseModel):
    model_config = ConfigDict(frozen=True)

    context_window: int = Field(default=128_000, gt=0)  # tokens
    threshold: float = Field(default=0.6, gt=0, le=1)  # compaction starts at this fraction of the window
    tail_fraction: float = Field(default=0.15, gt=0, le=1)  # newest turns kept in full
    guard_fraction: float = Field(default=0.9, gt=0, le=1)  # the view never goes over this, if it can
    max_result_tokens: int | None = Field(default=None, gt=0)  # None: a quarter of the window
    system_tokens: int = Field(default=4000, ge=0)  # system prompt and tool schemas
    # Per tool, the argument keys that identify a call in its summary line (the tools
    # declare them; the caller passes them in, so this module knows no tool).
    compact_keys: Mapping[str, tuple[str, ...]] = Field(default_factory=dict)

    @property
    def result_limit(self) -> int:
        if self.max_result_tokens is not None:
            return self.max_result_tokens
        return max(self.context_window // 4, 1)

    @property
    def trigger_tokens(self) -> float:
        return self.threshold * self.context_window

    @property
    def tail_tokens(self) -> float:
        return self.tail_fraction * self.context_window

    @property
    def guard_tokens(self) -> float:
        return self.guard_fraction * self.context_window


class CompactionResult(BaseModel):
    """The view and what it took. Token counts include ``policy.system_tokens``."""

    entries: list[Entry]
    compacted_turns: int = 0  # turns summarized because they were outside the tail
    dropped_turns: int = 0  # further turns the window guard took out of full view
    truncated_results: int = 0  # oversized tool results cut in the view
    tokens_before: int = 0
    tokens_after: int = 0
    changed: bool = False
    first_kept_seq: int | None = None  # seq of the first entry after the block


class CompactionMemo:
    """What ``compact`` worked out for one task's entries, kept between its calls: each entry's
    token cost and each summarized turn's line. Known by the entry objects themselves (an
    entry is never changed once in a transcript; a changed view of one is a copy), so a
    transcript read again, as new objects, only misses; what calls no longer pass is dropped."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []  # the last call's, with their costs and turns
        self._costs: list[int] = []
        self._turns: list[Turn] = []
        self._settled = 0  # of those turns, how many entries appended since cannot change
        self._lines: dict[tuple[int, int, int], tuple[Entry, Entry, str]] = {}
        self._keys: Mapping[str, tuple[str, ...]] | None = None
        self._used: set[tuple[int, int, int]] = set()

    def costs(self, entries: Sequence[Entry]) -> list[int]:
        """Each entry's cost; those of the last call's entries again (a call's entries are the
        last call's and what came since), the rest estimated."""
        known = self._known(entries)
        self._costs = self._costs[:known] + [estimate_tokens(e) for e in entries[known:]]
        if known < len(self._entries):
            self._turns, self._settled = [], 0
        self._entries = list(entries)
        return self._costs

    def turns(self) -> list[Turn]:
        """The turns of the entries ``costs`` was last given: the settled ones of the call
        before kept, the rest grouped again."""
        start = sum(len(t.entries) for t in self._turns[:self._settled])
        more, settled = grouped(self._entries[start:])
        self._turns, self._settled = self._turns[:self._settled] + more, self._settled + settled
        return self._turns

    def _known(self, entries: Sequence[Entry]) -> int:
        """How many of the first ``entries`` are the last call's own objects."""
        old = self._entries
        if len(entries) >= len(old) and all(map(operator.is_, old, entries)):
            return len(old)
        return next((i for i, (a, b) in enumerate(zip(old, entries, strict=False)) if a is not b),
                    min(len(old), len(entries)))

    def line(self, turn: Turn, keys: Mapping[str, tuple[str, ...]]) -> str:
        if keys != self._keys:  # the tools' keys (a copy of the same each call, as the policy validates them)
            self._lines, self._keys = {}, keys
        first, last = turn.entries[0], turn.entries[-1]
        key = (id(first), id(last), len(turn.entries))
        self._used.add(key)
        hit = self._lines.get(key)
        if hit is None or hit[0] is not first or hit[1] is not last:
            hit = self._lines[key] = (first, last, turn_summary(turn, keys))
        return hit[2]

    def settle(self) -> None:
        """After a call: drop the lines of turns that call did not summarize, once they pile up."""
        if len(self._lines) > 2 * len(self._used) + 64:
            self._lines = {k: v for k, v in self._lines.items() if k in self._used}
        self._used = set()


def compact(entries: Sequence[Entry], policy: CompactionPolicy | None = None,
            memo: CompactionMemo | None = None) -> CompactionResult:
    """The model's view of ``entries`` under ``policy``; see the module docstring. ``memo``:
    this task's, from its earlier calls (the same result, computed with less work)."""
    policy = policy or CompactionPolicy()
    costs = memo.costs(entries) if memo is not None else [estimate_tokens(entry) for entry in entries]
    before = policy.system_tokens + sum(costs)
    if before < policy.trigger_tokens:
        return CompactionResult.model_construct(  # the other fields keep their defaults
            entries=list(entries), tokens_before=before, tokens_after=before
        )

    turns = memo.turns() if memo is not None else group_turns(entries)
    views, sizes, cuts = _fit_results(entries, turns, costs, policy.result_limit)
    first_user = next((i for i, turn in enumerate(turns) if _has_user_message(turn)), -1)
    tail_from = _tail_start(sizes, first_user + 1, policy.tail_tokens)
    summarized = [i for i in range(tail_from) if i != first_user]
    summary = memo.line if memo is not None else turn_summary
    block = SummaryBlock()
    for i in summarized:
        block.add(summary(turns[i], policy.compact_keys))
    compacted = len(summarized)

    # Window guard: the kept turns over it fold into the block, oldest first; then the block's
    # oldest lines go until it fits in the room they leave.
    kept_size = policy.system_tokens + sum(sizes[tail_from:])
    kept_size += sizes[first_user] if first_user >= 0 else 0
    while kept_size > policy.guard_tokens and tail_from < len(turns) - 1:
        block.add(summary(turns[tail_from], policy.compact_keys))
        summarized.append(tail_from)
        kept_size -= sizes[tail_from]
        tail_from += 1
    block.shed(policy.guard_tokens - kept_size)
    if memo is not None:
        memo.settle()

    kept = ([first_user] if first_user >= 0 else []) + list(range(tail_from, len(turns)))
    out: list[Entry] = list(views[first_user]) if first_user >= 0 else []
    if block.present:
        last_turn = turns[summarized[-1]].entries[-1].turn
        out.append(SystemReminder(text=block.text(), reason=COMPACTED_REASON, turn=last_turn))
    for i in range(tail_from, len(turns)):
        out.extend(views[i])
    dropped = len(summarized) - compacted
    truncated = sum(cuts[i] for i in kept)
    return CompactionResult.model_construct(
        entries=out,
        compacted_turns=compacted,
        dropped_turns=dropped,
        truncated_results=truncated,
        tokens_before=before,
        tokens_after=kept_size + block.tokens(),
        changed=bool(compacted or dropped or truncated),
        first_kept_seq=views[tail_from][0].seq if block.present and tail_from < len(turns) else None,
    )


def _has_user_message(turn: Turn) -> bool:
    return any(isinstance(entry, UserMessage) for entry in turn.entries)


def _tail_start(sizes: list[int], floor: int, budget: float) -> int:
    """Index of the oldest turn (not below ``floor``) of the kept tail; the newest turn is
    always in it.

    The older turns are cut in steps of half the budget, so the tail holds between half the
    budget and the budget, and the boundary moves only once half a budget of new turns has
    come in. Between moves the compacted block and the turns after it are unchanged, so
    the model's view of one call is a prefix of the next and the provider's prompt cache
    holds: a boundary recomputed to the last token would move, and break it, every turn.
    """
    total = sum(sizes[floor:])
    if total <= budget:
        return floor
    chunk = max(budget / 2, 1.0)
    cut = math.ceil((total - budget) / chunk) * chunk  # what must go, rounded up to whole steps
    start, removed = floor, 0
    while start < len(sizes) - 1 and removed < cut:
        removed += sizes[start]
        start += 1
    return start


def _fit_results(
    entries: Sequence[Entry], turns: list[Turn], costs: list[int], limit: int
) -> tuple[list[list[Entry]], list[int], list[int]]:
    """Each turn's entries with results over ``limit`` tokens cut, its size, and its cut count.

    A turn's list is the Turn's own unless something in it was cut; then it is a copy."""
    starts: list[int] = []
    sizes: list[int] = []
    offset = 0
    for turn in turns:
        starts.append(offset)
        sizes.append(sum(costs[offset : offset + len(turn.entries)]))
        offset += len(turn.entries)
    views = [turn.entries for turn in turns]
    cuts = [0] * len(turns)
    limit_chars = limit * CHARS_PER_TOKEN
    for index in [i for i, cost in enumerate(costs) if cost > limit]:  # cheap pre-filter
        entry = entries[index]
        if isinstance(entry, ToolResult) and len(entry.content) > limit_chars:
            t = bisect_right(starts, index) - 1
            if cuts[t] == 0:
                views[t] = list(views[t])
            short = _truncate(entry, limit_chars)
            views[t][index - starts[t]] = short
            sizes[t] += estimate_tokens(short) - costs[index]
            cuts[t] += 1
    return views, sizes, cuts


def _truncate(result: ToolResult, limit_chars: int) -> ToolResult:
    """A copy of ``result`` whose content keeps its head and tail within ``limit_chars``."""
    content = result.content
    reserve = len(TRUNCATION_NOTE.format(n=len(content))) + 2
    keep = max(limit_chars - reserve, 0)
    head, tail = (keep + 1) // 2, keep // 2
    note = TRUNCATION_NOTE.format(n=len(content) - keep)
    text = content[:head] + "\n" + note + "\n" + content[len(content) - tail :]
    return result.model_copy(update={"content": text, "truncated": True})
