"""A line typed at the terminal, read without a thread.

The event loop watches stdin, so a question can be withdrawn while it waits (the call was
decided elsewhere, or Ctrl-C was pressed at it: the prompt is erased and what was typed is
dropped, so no dead prompt stays on the screen to take the next keys). A thread blocked in
``input()`` allows neither, and asyncio waits for it at exit: the prompt went stale and
Ctrl-C at it hung.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import termios
from collections.abc import Awaitable, Callable
from typing import TextIO

POLL_S = 0.5  # how often a waiting question asks whether it still stands
ERASE_LINE = "\r\x1b[2K"


async def never() -> bool:
    return False


async def read_line(prompt: str, out: TextIO, withdrawn: Callable[[], Awaitable[bool]] = never) -> str | None:
    """The line typed after ``prompt`` ("" at the end of input); None when ``withdrawn()``
    says the question is gone before a line was typed."""
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    typed = bytearray()
    line: asyncio.Future[str] = loop.create_future()

    def readable() -> None:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            chunk = b""
        typed.extend(chunk)
        if (not chunk or b"\n" in typed) and not line.done():
            line.set_result(typed.split(b"\n", 1)[0].decode(errors="replace").strip())

    out.write(prompt)
    out.flush()
    loop.add_reader(fd, readable)
    try:
        while True:
            try:
                return await asyncio.wait_for(asyncio.shield(line), POLL_S)
            except TimeoutError:
                if await withdrawn():
                    _erase(fd, out)
                    return None
    except asyncio.CancelledError:  # Ctrl-C: the question is no longer live, so it goes too
        _erase(fd, out)
        raise
    finally:
        loop.remove_reader(fd)


def _erase(fd: int, out: TextIO) -> None:
    """The prompt off the screen, and a half-typed answer dropped: it is not for what comes next."""
    out.write(ERASE_LINE)
    out.flush()
    with contextlib.suppress(termios.error, OSError):
        termios.tcflush(fd, termios.TCIFLUSH)
