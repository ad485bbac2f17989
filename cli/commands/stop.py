"""``stop ID``: ask a running task to stop; it ends as FAILED, stopped."""

from __future__ import annotations

import argparse

from cli.tasks import running
from temporal.client import connect
from workflows.task import AgentTaskWorkflow


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("stop", help="stop a task (it ends as FAILED, stopped)")
    s.add_argument("id")
    s.add_argument("--reason", default="stopped by user")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    await running(client, args.id)
    await client.get_workflow_handle(args.id).signal(AgentTaskWorkflow.stop, args.reason)
    print(f"stop requested for {args.id}")
    return 0
