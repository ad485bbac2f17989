"""Openers of one SQLite file take turns, so that switching a new file to WAL cannot fail.

Two connections switching a file to WAL at the same moment each hold the other off, and SQLite
answers one of them "database is locked" at once rather than wait out its busy timeout (both
the context store and the memory index met it when two workers, or two searches, made the file
together). Holding a lock file beside the database while opening makes them queue instead;
flock serves processes and threads alike, and is released when the file closes.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def opening_turn(path: str | Path) -> Iterator[None]:
    """Hold ``<path>.lock`` while the body opens ``path`` (nothing to hold for ``:memory:``)."""
    if str(path) == ":memory:":
        yield
        return
    with open(f"{path}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
