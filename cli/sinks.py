"""Where a follower (``cli/follow.py``) reports what it sees: the console
(``cli/screen.py``) or ``watch --json``'s lines (the events of ``cli/events.py``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from cli.events import EventMapper, no_usage
from cli.usage import HistoryUsage
from contracts.task import TaskOutcome, TaskStatus
from core.entries import Entry


class Sink:
    """Where a follower reports what it sees: the console (``cli/screen.py``) or JSON lines.
    Every hook does nothing here, so a sink implements what it shows."""

    def started_at(self, when: datetime | None) -> None: ...
    def status(self, status: TaskStatus) -> None: ...
    def delta(self, turn: int, text: str) -> None: ...
    def restart(self, turn: int) -> None: ...  # the model call of ``turn`` started over: its text is void
    def entry(self, entry: Entry, status: TaskStatus) -> None: ...
    def note(self, text: str) -> None: ...
    def retry(self, activity: str, attempt: int, reason: str, next_in_s: float | None) -> None: ...
    def waiting(self, status: TaskStatus) -> None: ...
    def subagent_waiting(self, workflow_id: str, status: TaskStatus) -> None: ...
    def outcome(self, outcome: TaskOutcome, duration_s: float | None) -> None: ...
    def close(self) -> None: ...

    async def ready(self, turns: list[int], final: bool) -> None:
        """Called before entries of ``turns`` are shown (``final``: and then the outcome)."""

    @contextmanager
    def paused(self) -> Iterator[None]:
        """While a person is asked at the prompt."""
        yield


class JsonSink(Sink):
    def __init__(self, workflow_id: str, out=None, usage: HistoryUsage | None = None) -> None:
        self.usage = usage
        self.mapper = EventMapper(workflow_id, usage.of if usage else no_usage)
        self.out = out or sys.stdout
        self._emit(self.mapper.begin())

    def delta(self, turn: int, text: str) -> None:
        self._emit([{"type": "text.delta", "turn": turn, "text": text}])

    def restart(self, turn: int) -> None:
        self._emit([{"type": "text.reset", "turn": turn}])

    def _emit(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            self.out.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
        self.out.flush()

    async def ready(self, turns: list[int], final: bool) -> None:
        """A turn's usage goes out with its ``turn.completed``: wait until the history has it."""
        if self.usage is None:
            return
        if final:
            await self.usage.through(max([self.mapper.turn, *turns]))
        elif turns and max(turns) > max(self.mapper.turn, 1):  # turns before the latest complete here
            await self.usage.through(max(turns) - 1)

    def entry(self, entry: Entry, status: TaskStatus) -> None:
        self._emit(self.mapper.entry(entry))

    def retry(self, activity: str, attempt: int, reason: str, next_in_s: float | None) -> None:
        self._emit([{"type": "retry", "activity": activity, "attempt": attempt, "reason": reason, "next_in_s": next_in_s}])

    def waiting(self, status: TaskStatus) -> None:
        self._emit(self.mapper.waiting(status))

    def subagent_waiting(self, workflow_id: str, status: TaskStatus) -> None:
        self._emit(self.mapper.waiting(status, workflow_id))

    def outcome(self, outcome: TaskOutcome, duration_s: float | None) -> None:
        self._emit(self.mapper.finish(outcome))

    def close(self) -> None:
        if self.usage is not None:
            self.usage.close()
