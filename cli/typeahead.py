"""The keys of a conversation at a terminal, read by the conversation itself.

While ``run`` stays in a conversation the terminal is out of its canonical mode with its echo
off, and every key is read here, as the event loop sees stdin readable. In the terminal's
own mode the kernel echoed what was typed while a task ran into the middle of the status
line rich redraws (where it was erased), and kept the line for whichever question read stdin
next, an approval prompt included. Here a line typed while a task runs is queued (the
conversation shows it as queued and sends it when the turn ends, as Claude Code does), the
line being typed is drawn where the conversation says (the live region, the prompt), and
Ctrl-D on an empty line ends the input at once, so leaving never waits for a task.

``read_prompt`` is the conversation's prompt. Ctrl-C stays a signal (ISIG is left on): the
conversation reads it as SIGINT. A question asked at the prompt (``cli/prompt.py``) reads
stdin itself: ``paused`` hands the terminal back to its own mode meanwhile.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import termios
from collections.abc import Callable, Iterator

from rich.cells import cell_len
from rich.console import Console

from cli.render import safe

# An escape sequence (an arrow key, a function key): nothing to type into a line.
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|O.|.)?", re.DOTALL)
BACKSPACES = ("\x7f", "\b")
KILL_LINE, END_OF_INPUT = "\x15", "\x04"  # Ctrl-U, Ctrl-D


PROMPT = "› "


def nothing(_: str) -> None:
    return None


class Detached(Exception):
    """A Ctrl-C (or a Ctrl-D while a task runs) that leaves the conversation; a task that runs goes on."""


class Keys:
    """Lines typed, oldest first, and the line being typed (``draft``)."""

    def __init__(self, fd: int = 0) -> None:
        self.fd, self.draft = fd, ""
        self.lines: list[str] = []
        self.keep_blank = False  # an empty line is one (at the prompt: Enter alone has a meaning)
        self.ended = asyncio.Event()  # Ctrl-D on an empty line, or the end of the input
        self.arrived = asyncio.Event()  # set when a line, or the end, comes
        self.on_draft: Callable[[str], None] = nothing  # what draws the line being typed
        self.on_line: Callable[[str], None] = nothing  # what says a line was typed
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._saved: list | None = None

    @contextlib.contextmanager
    def reading(self) -> Iterator[Keys]:
        """The terminal in this mode, and the keys read, for the duration."""
        self._saved = termios.tcgetattr(self.fd)
        self._own_mode()
        try:
            yield self
        finally:
            self._terminal_mode()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The terminal as it was (its line editing, its echo), while a question reads stdin."""
        if self._saved is None:
            yield
            return
        self._terminal_mode()
        try:
            yield
        finally:
            self._own_mode()

    async def wait(self) -> None:
        """Until a line is queued or the input ends."""
        while not self.lines and not self.ended.is_set():
            self.arrived.clear()
            await self.arrived.wait()

    def next_message(self, is_command: Callable[[str], bool]) -> str:
        """The next of the lines queued, taken from them: a slash command alone, else the
        messages up to the next command, as one message."""
        count = 1 if is_command(self.lines[0]) else next(
            (i for i, line in enumerate(self.lines) if is_command(line)), len(self.lines))
        text = "\n".join(self.lines[:count])
        del self.lines[:count]
        return text

    def _own_mode(self) -> None:
        assert self._saved is not None
        mode = termios.tcgetattr(self.fd)
        mode[3] &= ~(termios.ICANON | termios.ECHO)
        mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self.fd, termios.TCSANOW, mode)
        asyncio.get_running_loop().add_reader(self.fd, self._readable)

    def _terminal_mode(self) -> None:
        asyncio.get_running_loop().remove_reader(self.fd)
        if self._saved is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self.fd, termios.TCSANOW, self._saved)

    def _readable(self) -> None:
        try:
            chunk = os.read(self.fd, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            self._end()
            return
        self.feed(self._decoder.decode(chunk))

    def feed(self, text: str) -> None:
        """Keys as typed: a line ends with Enter; Backspace and Ctrl-U edit the line."""
        for key in _ESCAPE.sub("", text):
            if key in "\r\n":
                self.on_draft(self.draft)  # drawn whole first: a line may come in one read (fast typing, a paste)
                line, self.draft = self.draft.strip(), ""
                if line or self.keep_blank:
                    self.lines.append(line)
                    self.arrived.set()
                    self.on_line(line)
            elif key in BACKSPACES:
                self.draft = self.draft[:-1]
            elif key == KILL_LINE:
                self.draft = ""
            elif key == END_OF_INPUT:
                if not self.draft:
                    self._end()
                    return
            elif key >= " ":
                self.draft += key
        self.on_draft(self.draft)

    def _end(self) -> None:
        self.ended.set()
        self.arrived.set()


class PromptLine:
    """A prompt and the line typed after it, drawn here since the terminal echoes nothing."""

    def __init__(self, console: Console, prompt: str) -> None:
        self.console, self.prompt, self.drawn = console, prompt, 0  # drawn: its width as last drawn

    def draw(self, draft: str) -> None:
        """Over what was drawn of it before (rows up, then erased to the end of the screen)."""
        up = (max(self.drawn, 1) - 1) // max(self.console.width, 1)
        self.console.file.write("\r" + (f"\x1b[{up}A" if up else "") + "\x1b[J")
        self.console.print(f"[bold cyan]{self.prompt}[/]{safe(draft)}", end="")
        self.drawn = cell_len(self.prompt + draft)


async def read_prompt(keys: Keys, console: Console, pressed: asyncio.Event, is_command: Callable[[str], bool],
                      queued: Callable[[str], None]) -> str | None:
    """One line at the prompt: first what was queued while a task ran (sent now, as if typed
    here); None at Ctrl-D; a Ctrl-C (``pressed``) there raises Detached. ``queued`` says a
    line was typed once the prompt is gone."""
    if keys.lines:
        text = keys.next_message(is_command)
        console.print(f"[bold cyan]{PROMPT}[/]{safe(text)}")
        return text
    prompt = PromptLine(console, PROMPT)
    prompt.draw(keys.draft)

    def entered(_: str) -> None:  # the line is done: nothing more is drawn after the prompt
        keys.on_draft = nothing
        console.print()

    keys.keep_blank, keys.on_draft, keys.on_line = True, prompt.draw, entered
    reading = asyncio.ensure_future(keys.wait())
    pressing = asyncio.ensure_future(pressed.wait())
    try:
        await asyncio.wait({reading, pressing}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        pressing.cancel()
        reading.cancel()
        keys.keep_blank, keys.on_draft, keys.on_line = False, nothing, queued
    if keys.lines:
        return keys.lines.pop(0)
    if keys.ended.is_set():
        return None
    pressed.clear()
    console.print()
    raise Detached
