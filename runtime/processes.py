"""Worker processes under one supervisor: `worker --processes N`.

Python runs one event loop per process, so a host's cores are used by several worker
processes sharing the store. The supervisor forwards SIGTERM/SIGINT to each (each drains
and exits), and a child dies with it (a parent-death signal), so none outlives it. Children
run in a process group of their own: a Ctrl-C at the terminal reaches the supervisor only, and
each child gets it once (forwarded), not twice (which a worker reads as "exit now").
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

# A supervised child notes SIGTERM/SIGINT from its first instant (before the imports, which
# take a while), and its worker acts on them as soon as it runs: a stop is never lost.
_CHILD = (
    "import signal, sys\n"
    "stop = []\n"
    "for s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, lambda n, f: stop.append(n))\n"
    "import {module}\n"
    "{module}.run_child(stop, int(sys.argv[1]))\n"
)


def supervise(processes: int, connection: Mapping[str, str], *, module: str, cwd: Path) -> int:
    """Run ``processes`` children, each ``module.run_child(stop_requested, index)`` with
    the ``connection`` options after its index; the exit status furthest from 0."""
    arguments = [arg for name, value in connection.items() for arg in (f"--{name}", value)]
    children = [
        subprocess.Popen([sys.executable, "-c", _CHILD.format(module=module), str(index), *arguments],
                         cwd=cwd, preexec_fn=_die_with_parent, process_group=0)
        for index in range(processes)
    ]

    def forward(signum: int, _frame: Any) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    codes = [child.wait() for child in children]
    return max(codes, key=abs)


@contextlib.contextmanager
def routed_stops(loop: asyncio.AbstractEventLoop, stop: Callable[[str], None], early: list[int]) -> Iterator[None]:
    """Send SIGINT and SIGTERM to ``stop`` on ``loop``, each signal once: first those a
    supervised child noted while it started (``early``), then every later one.

    Not ``loop.add_signal_handler``: it sets the wakeup fd before it replaces the Python
    handler, so a signal arriving in between reached both the child's early handler and the
    loop, and one SIGTERM counted as two (exit now, without draining). Here the wakeup fd only
    wakes the loop; the one Python handler in place when the signal is handled calls ``stop``.
    Afterwards Python's own handlers are back (a signal then ends the process)."""
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    loop.add_reader(reader.fileno(), reader.recv, 4096)
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda n, _frame: loop.call_soon_threadsafe(stop, signal.Signals(n).name))
    try:
        for signum in early:  # complete now: the early handler is no longer in place
            stop(signal.Signals(signum).name)
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        loop.remove_reader(reader.fileno())
        reader.close()
        writer.close()


def flush_quietly() -> None:
    """Flush what is buffered for stdout and stderr; a reader that is gone loses it."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux
        pass
