"""The command line: ``python starter.py --help`` lists the commands (docs/cli.md).

This file builds the parser from the command modules (``cli.commands.COMMANDS``, each with
``register`` and ``run``: see ``cli/__init__.py``), runs the one asked for, and turns the
errors a person can fix into one line and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys

from temporalio.service import RPCError

from cli.commands import COMMANDS
from cli.hints import INSTALLED, program
from cli.parsing import Parser
from cli.tasks import UserError
from cli.version import PACKAGE, package_version
from providers.model_table import load_models
from runtime.logs import configure_logging, sdk_logs_to
from runtime.paths import data_dir
from runtime.secrets import SecretStore
from runtime.settings import load_settings
from runtime.store import StoreUnavailable
from temporal.client import TemporalUnavailable
from temporal.connection import add_options, given, resolve
from temporal.server import ServerError
from temporal.tracing import shutdown_tracing

WORKER_LOG = "worker.log"


def parser() -> argparse.ArgumentParser:
    prog = INSTALLED if program() == INSTALLED else "starter.py"
    p = Parser(prog=prog, description="Durable agent tasks on Temporal.")
    p.add_argument("--version", action="version", version=f"{PACKAGE} {package_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    _with_connection_options(p)
    return p


def _with_connection_options(p: argparse.ArgumentParser) -> None:
    """--address, --namespace and --profile on ``p`` and on every command under it."""
    add_options(p)
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):  # an alias lists its parser twice
                _with_connection_options(child)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = load_settings()  # read once, here
        load_models(settings.models)  # the prices and models files the variables name, refused here
        settings = dataclasses.replace(settings, temporal=resolve(settings.temporal, given(args)))
    except ValueError as err:  # a variable with a bad value, a file it names, or a profile that cannot be read
        print(f"error: {err}", file=sys.stderr)
        return 2
    args.settings = settings  # every command takes what it needs from here
    log_file = data_dir(settings.paths) / WORKER_LOG  # a worker run in-process logs there, not over the output
    service = getattr(args, "logs_to_console", False)  # a service's lines (the gateway's) are its console
    configure_logging(settings.logging.level or ("INFO" if service else "WARNING"),
                      secrets=SecretStore.from_settings(settings.secrets), file=None if service else log_file)
    sdk_logs_to(log_file)
    try:
        return asyncio.run(args.run(args))
    except (UserError, TemporalUnavailable, ServerError, StoreUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except RPCError as err:  # the server refused or could not serve a call
        print(f"error: Temporal: {err.message} ({err.status.name})", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def entry() -> None:
    """The installed ``durable-agent`` command (pyproject.toml), and ``python starter.py``."""
    code = main()
    shutdown_tracing()  # flush spans: os._exit below skips atexit
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter finalization: the SDK's native runtime threads can race it and abort.
    os._exit(code)


if __name__ == "__main__":
    entry()
