"""``stop ID``: ask a running task to stop; it ends as FAILED, stopped."""

from __future__ import annotations

import argparse

from temporalio.client import WorkflowExecutionStatus

from cli.tasks import UserError, describe
from temporal.client import connect
from workflows.task import AgentTaskWorkflow


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("stop", help="stop a task (it ends as FAILED, stopped)")
    s.add_argument("id")
    s.add_argument("--reason", default="stopped by user")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    client = await connect()
    desc = await describe(client, args.id)
    if desc.status != WorkflowExecutionStatus.RUNNING:
        raise UserError(f"task {args.id} is not running ({desc.status.name.lower() if desc.status else 'unknown'})")
    await client.get_workflow_handle(args.id).signal(AgentTaskWorkflow.stop, args.reason)
    print(f"stop requested for {args.id}")
    return 0
