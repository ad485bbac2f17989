"""``watch ID [--json]``: follow a task to its end; exit 0 on DONE, 1 otherwise."""

from __future__ import annotations

import argparse
from contextlib import AsyncExitStack

from cli.local import local_worker, make_follower
from cli.tasks import closed_outcome, describe
from contracts.task import TaskState
from temporal.client import connect, is_embedded


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("watch", help="follow a task")
    s.add_argument("id")
    s.add_argument("--json", action="store_true", help="one JSON event per line (see README)")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    desc = await describe(client, args.id)
    async with AsyncExitStack() as stack:
        if is_embedded(args.settings.temporal):
            # Runs a running task on; answers the events query of a finished one by replaying it.
            await local_worker(stack, client, desc.task_queue, None, args.settings)
        follower = make_follower(client, args.id, args.settings, json_mode=args.json)
        outcome = await follower.run(lambda: closed_outcome(client, args.id))
    return 0 if outcome.status == TaskState.DONE else 1
