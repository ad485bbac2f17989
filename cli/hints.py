"""The commands the CLI suggests, written as the person would type them next: under the name
they invoked (``durable-agent``, the installed console script, or ``python starter.py`` in a
checkout) and with the connection options in use, so a hint copied after ``start --address X``
reaches the same server (the environment's TEMPORAL_* stay set for the next command: they
are not repeated)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from core.settings import TemporalSettings

INSTALLED = "durable-agent"


def program() -> str:
    """How this process was invoked: the console script by its name, else the checkout's file."""
    return INSTALLED if Path(sys.argv[0]).name == INSTALLED else "python starter.py"


def invoked(rest: str, temporal: TemporalSettings) -> str:
    """``rest`` (a command and its arguments, already quoted) as a full command line."""
    flags = " ".join(f"--{name} {shlex.quote(value)}" for name, value in temporal.given)
    return " ".join(part for part in (program(), rest, flags) if part)
