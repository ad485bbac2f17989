"""The console sink: a task as lines a person reads.

On a terminal the bottom of the screen is live (rich's ``Live``, transient): the reply the
model is streaming and one status line (state, turn, elapsed, tokens, cost, and a spinner
while the model thinks or a tool runs). A reply reaches the scrollback once, whole, when its
turn's entry arrives, so nothing is printed twice and nothing is printed into the middle of
a streaming line; a reply whose call is cut off (a Ctrl-C, a new message) never gets an entry,
so it goes to the scrollback as far as it came, marked. In a conversation the line the person
is typing meanwhile is drawn under the status line (cli/typeahead.py). The live region is
erased when the task ends or the sink closes. Anywhere
else (a pipe, a file, ``TERM=dumb``) there is no live region: a reply is printed as it
streams and its entry adds only what follows it.

Each turn starts with a ``── turn N ──`` line, N the number ``rewind --to-turn`` and ``fork``
take (the model call's turn, which the entries carry).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from cli.render import render_entry, render_outcome, safe
from cli.sinks import Sink
from contracts.task import TaskOutcome, TaskState, TaskStatus
from core.entries import AiMessage, Entry, StatusNotice, ToolCall, UserMessage
from core.text import shorten, terminal_safe

if TYPE_CHECKING:
    from cli.typeahead import Keys

BUSY = (TaskState.INITIALIZING, TaskState.THINKING, TaskState.EXECUTING_TOOL, TaskState.FINALIZING)
REFRESH_PER_S = 10
# The notice a failing task appends (workflows/engine.py ``_fail``): the outcome's line says it.
FAILED_NOTICE = "task failed: "
CUT = "⋯ cut off"  # after a reply whose model call was cut off (a Ctrl-C, a new message): it stays


class ConsoleSink(Sink):
    def __init__(self, console: Console, *, live: bool | None = None, verbose: bool = False) -> None:
        self.console, self.verbose = console, verbose  # verbose: also what was written for the model
        self.live = (console.is_terminal and not console.is_dumb_terminal) if live is None else live
        self.streamed: set[int] = set()  # elsewhere: turns whose reply was printed as it streamed
        self.open_line = False
        self.turn_shown = 0  # the last turn whose header line was printed
        self.reply, self.reply_turn = "", 0  # on a terminal: the reply streaming now
        self.last: TaskStatus | None = None
        self.since: float | None = None  # when the task started (epoch seconds)
        self.spinner = Spinner("dots", style="cyan")
        self.typing: Keys | None = None  # in a conversation: what the person types meanwhile
        self._screen: Live | None = None
        self._paused = False

    # ---- what the follower reports ---------------------------------------------------

    def started_at(self, when: datetime | None) -> None:
        if when is not None and self.since is None:
            self.since = when.timestamp()

    def status(self, status: TaskStatus) -> None:
        self.last = status
        self._show_live()

    def delta(self, turn: int, text: str) -> None:
        if self.live:
            if turn != self.reply_turn:
                self._keep_cut_reply()
                self.reply_turn = turn
            self.reply += text
            self._show_live(refresh=True)
            return
        if turn not in self.streamed:
            self.streamed.add(turn)
            self._turn_header(turn)
            self.console.print("[cyan]model[/] ", end="")
        self.console.print(terminal_safe(text), end="", markup=False, highlight=False)
        self.open_line = True

    def restart(self, turn: int) -> None:
        """The model call of ``turn`` started over (a retry): its reply so far is void."""
        if self.live:
            self.reply = ""
        elif turn in self.streamed:
            self._end_line()
            self.console.print("[dim]· the model call was retried: its reply starts over[/]")
            self.streamed.discard(turn)

    def entry(self, entry: Entry, status: TaskStatus) -> None:
        if isinstance(entry, StatusNotice) and entry.text.startswith(FAILED_NOTICE):
            self.status(status)
            return  # a failure is one line on the terminal: the outcome's, which follows
        self._end_line()
        if self.live:
            if isinstance(entry, (AiMessage, ToolCall)) and entry.turn == self.reply_turn and self.reply:
                self.reply = ""  # it goes into the scrollback, whole: out of the live region first
                self._show_live(refresh=True)
            elif isinstance(entry, UserMessage) or entry.turn > self.reply_turn:
                self._keep_cut_reply()  # its call was cut off: its entry never comes
            self._turn_header(entry.turn)
            render_entry(self.console, entry, verbose=self.verbose)
        else:
            self._turn_header(entry.turn)
            render_entry(self.console, entry, text_shown=entry.turn in self.streamed, verbose=self.verbose)
        self.status(status)

    def typed(self) -> None:
        """The line being typed changed: it is drawn under the status line."""
        self._show_live(refresh=True)

    def queued(self, line: str) -> None:
        """A line typed while the task runs, queued: printed by this console, above its live region."""
        self._end_line()
        self.console.print(f"[dim]queued: {safe(line)}[/]")

    def note(self, text: str) -> None:
        self._end_line()
        self.console.print(f"[dim]· {safe(text)}[/]")

    def retry(self, activity: str, attempt: int, reason: str, next_in_s: float | None) -> None:
        self._end_line()
        when = f", next try in {next_in_s:.1f}s" if next_in_s is not None else ""
        self.console.print(f"[yellow]↻ {safe(activity)} attempt {attempt} failed: {safe(reason)}{when}[/]")

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No live region while a person is asked at the prompt."""
        self._end_line()
        self._stop_live()
        self._paused = True
        try:
            with self.typing.paused() if self.typing is not None else nullcontext():
                yield
        finally:
            self._paused = False

    def outcome(self, outcome: TaskOutcome, duration_s: float | None) -> None:
        self.close()
        self._end_line()
        render_outcome(self.console, outcome, duration_s)

    def close(self) -> None:
        self._keep_cut_reply()
        self._stop_live()
        self.live = False  # nothing goes live after the end

    # ---- the live region -------------------------------------------------------------

    def _show_live(self, *, refresh: bool = False) -> None:
        if not self.live or self._paused or self.last is None or (self._screen is None and self.last.state.finished):
            return
        if self._screen is None:
            self._screen = Live(
                console=self.console, get_renderable=self._render, transient=True,
                refresh_per_second=REFRESH_PER_S, vertical_overflow="crop",
            )
            self._screen.start()
        elif refresh:
            self._screen.refresh()

    def _keep_cut_reply(self) -> None:
        """A reply shown live whose entry will not come (its model call was cut off): into
        the scrollback as far as it came, marked, instead of vanishing with the live region."""
        if self.live and self.reply:
            reply, self.reply = self.reply, ""
            self._show_live(refresh=True)
            self._turn_header(self.reply_turn)
            self.console.print(Text.assemble(("model ", "cyan"), terminal_safe(reply), (f" {CUT}", "dim")))

    def _stop_live(self) -> None:
        screen, self._screen = self._screen, None
        if screen is not None:
            screen.stop()

    def _render(self) -> RenderableType:
        rows: list[Text] = []
        width = max(self.console.width, 20)
        if self.reply:
            lines = Text.assemble(("model ", "cyan"), terminal_safe(self.reply)).wrap(self.console, width)
            rows.extend(lines[-max(1, self.console.height - 3):])  # the tail that fits
        if self.last is not None:
            rows.append(self._status_line(self.last, width))
        if self.typing is not None and self.typing.draft:
            rows.append(Text.assemble(("› ", "bold cyan"), terminal_safe(self.typing.draft)))
        return Group(*rows)

    def _status_line(self, status: TaskStatus, width: int) -> Text:
        usage = status.usage
        parts = [status.state.value.replace("_", " ").lower(), f"turn {status.turn}"]
        if self.since is not None:
            parts.append(elapsed(time.time() - self.since))
        parts += [f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens", f"${status.cost_usd:.4f}"]
        if status.state in BUSY and status.last_activity:
            parts.append(shorten(terminal_safe(status.last_activity), 80))
        if status.state in BUSY:
            mark = self.spinner.render(self.console.get_time())
        else:
            mark = Text("·", style="yellow")
        line = Text.assemble(mark if isinstance(mark, Text) else Text("·"), " ", (" · ".join(parts), "dim"))
        line.truncate(width - 1, overflow="ellipsis")
        return line

    def _turn_header(self, turn: int) -> None:
        if turn > self.turn_shown:
            self.turn_shown = turn
            self.console.print(f"[dim]── turn {turn} ──[/]")

    def _end_line(self) -> None:
        if self.open_line:
            self.console.print()
            self.open_line = False


def elapsed(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"
