"""``watch ID [--json]``: follow a task to its end; exit 0 on DONE, 1 otherwise."""

from __future__ import annotations

import argparse

from cli.background import connect
from cli.local import make_follower
from cli.tasks import closed_outcome, describe
from contracts.task import TaskState


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("watch", help="follow a task")
    s.add_argument("id")
    s.add_argument("--json", action="store_true", help="one JSON event per line (see docs/cli.md)")
    s.add_argument("--verbose", action="store_true", help="also show what was written for the model alone "
                   "(the engine's reminders, the message a Ctrl-C sends)")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    # On the embedded default the background worker runs a running task on, and answers the
    # events query of a finished one by replaying it.
    client = await connect(args.settings)
    await describe(client, args.id)
    follower = make_follower(client, args.id, args.settings, json_mode=args.json, verbose=args.verbose)
    outcome = await follower.run(lambda: closed_outcome(client, args.id))
    return 0 if outcome.status == TaskState.DONE else 1
