"""The commands of ``starter.py``, one module each, in the order ``--help`` lists them.

Each module has ``register(subparsers)``, which adds its parser (``interject`` also adds
``reply``; ``schedule`` has subcommands) and sets the parser's ``run`` default to the module's
``run``, and ``async run(args) -> int``, which returns the exit status. See ``cli/__init__.py``.
"""

from __future__ import annotations

from cli.commands import (
    approve,
    evals,
    fork,
    gateway,
    interject,
    listing,
    mcp_serve,
    record,
    rewind,
    run,
    schedule,
    server,
    start,
    status,
    stop,
    watch,
    worker,
)

COMMANDS = (run, start, status, watch, stop, approve, interject, listing, rewind, fork, schedule, evals, record, mcp_serve,
            worker, gateway, server)
