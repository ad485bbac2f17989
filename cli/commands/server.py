"""``server status|stop|logs``: the Temporal dev server and the worker that run in the
background on the embedded default (cli/background.py)."""

from __future__ import annotations

import argparse

from cli import background
from cli.options import positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser(
        "server", help="the dev server and worker running in the background: status, stop, logs",
        description="On the embedded default (no --address, TEMPORAL_ADDRESS or profile address) the first "
        "command that connects starts a Temporal dev server and a worker in the background; they outlive "
        "the terminal, and tasks keep running in them.")
    actions = s.add_subparsers(dest="action", required=True)
    actions.add_parser("status", help="whether they run, their pids, logs and address")
    actions.add_parser("stop", help="stop the worker (it lets running activities finish) and the server; "
                       "tasks go on when they start again")
    logs = actions.add_parser("logs", help="the end of their logs")
    logs.add_argument("-n", "--lines", type=positive_int, default=20, help="lines of each log (default: 20)")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    if args.action == "status":
        lines = background.status_lines(args.settings)
    elif args.action == "stop":
        lines = background.stop(args.settings)
    else:
        lines = background.log_tails(args.settings, args.lines)
    print("\n".join(lines))
    return 0
