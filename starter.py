"""The CLI: start, run, watch, status, stop, approve, interject and list agent tasks.

    python starter.py run "TASK" [--workspace DIR]     start, follow live, exit 0 on DONE / 1 on FAILED
    python starter.py start "TASK" [--workspace DIR]   start; the workflow id is the last line
    python starter.py status ID [--json]
    python starter.py watch ID [--json]
    python starter.py stop ID [--reason TEXT]
    python starter.py approve ID [--deny] [--reason TEXT] [--call CALL_ID | --yes]
    python starter.py interject ID "TEXT"        (also: reply ID "TEXT")
    python starter.py list [--pending]
    python starter.py schedule create|list|trigger|delete ...
    python starter.py mcp-serve [--http PORT] [--worker]
    python starter.py eval SUITE --trials K [--demo | --replay] [--json FILE] [--min-pass X]
    python starter.py record ID --into SUITE

The commands live in ``cli/``; this file only parses arguments and reports errors.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from temporalio.service import RPCError

from cli import evals, mcp_serve, schedule
from cli.commands import COMMANDS
from cli.options import add_task_options
from cli.tasks import UserError
from runtime.logs import configure_logging, sdk_logs_to
from runtime.paths import data_dir
from runtime.store import StoreUnavailable
from temporal.client import TemporalUnavailable
from temporal.server import ServerError
from temporal.tracing import shutdown_tracing

WORKER_LOG = "worker.log"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="starter.py", description="Durable agent tasks on Temporal.")
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text in (("run", "start a task and follow it to the end"), ("start", "start a task and print its id")):
        s = sub.add_parser(name, help=help_text)
        s.add_argument("task", help="the instruction")
        add_task_options(s)
        if name == "run":
            s.add_argument("--demo", action="store_true", help="use the offline scripted demo model")
    s = sub.add_parser("status", help="show a task's state")
    s.add_argument("id")
    s.add_argument("--json", action="store_true")
    s = sub.add_parser("watch", help="follow a task")
    s.add_argument("id")
    s.add_argument("--json", action="store_true", help="one JSON event per line (see README)")
    s = sub.add_parser("stop", help="stop a task (it ends as FAILED, stopped)")
    s.add_argument("id")
    s.add_argument("--reason", default="stopped by user")
    s = sub.add_parser("approve", help="approve (or --deny) the pending tool call (the task's, or its sub-agent's)")
    s.add_argument("id")
    s.add_argument("--deny", action="store_true")
    s.add_argument("--reason", default="")
    s.add_argument("--call", help="the pending call's id (without it, the call is shown and confirmed)")
    s.add_argument("--yes", action="store_true", help="decide on the call shown, without asking")
    s.add_argument("--signal", action="store_true", help="send as a signal, without confirmation")
    for name in ("interject", "reply"):
        s = sub.add_parser(name, help="send the task a message (cuts off what is running)")
        s.add_argument("id")
        s.add_argument("text")
    s = sub.add_parser("list", help="list tasks")
    s.add_argument("--limit", type=int, default=50)
    s.add_argument("--pending", "--waiting", dest="pending", action="store_true",
                   help="only tasks waiting for a person (sub-agents too, with whose they are)")
    for name, help_text in (
        ("rewind", "take a task back to the end of a turn: its workspace restored, later turns undone"),
        ("fork", "start a new task from the end of a turn of this one, in a copy of its workspace"),
    ):
        s = sub.add_parser(name, help=help_text)
        s.add_argument("id")
        s.add_argument("--to-turn", type=int, required=True, metavar="N", help="keep turns 1..N")
        if name == "fork":
            s.add_argument("--workspace", help="where the copy goes (default: beside the original)")
    schedule.register(sub)
    evals.register(sub)
    mcp_serve.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    configure_logging(os.environ.get("AGENT_LOG_LEVEL", "WARNING"))
    sdk_logs_to(data_dir() / WORKER_LOG)  # a worker run in-process logs there, not over the output
    try:
        return asyncio.run(COMMANDS[args.command](args))
    except (UserError, TemporalUnavailable, ServerError, StoreUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except RPCError as err:  # the server refused or could not serve a call
        print(f"error: Temporal: {err.message} ({err.status.name})", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    code = main()
    shutdown_tracing()  # flush spans: os._exit below skips atexit
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter finalization: the SDK's native runtime threads can race it and abort.
    os._exit(code)
