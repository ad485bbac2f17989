"""Worker processes under one supervisor: `worker --processes N`.

Python runs one event loop per process, so a host's cores are used by several worker
processes sharing the store. The supervisor forwards SIGTERM/SIGINT to each (each drains
and exits), and a child dies with it (a parent-death signal), so none outlives it.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import subprocess
import sys
from collections.abc import Mapping
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
                         cwd=cwd, preexec_fn=_die_with_parent)
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
