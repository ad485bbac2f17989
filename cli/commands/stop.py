"""``stop ID``: end a running task, with or without a worker to hear it.

The stop signal first (the task ends as FAILED, stopped, its running call cut off); if it
has not ended after ``--grace`` seconds, Temporal's cancel (it ends CANCELLED); then, after
the grace again, terminate with the reason. With no worker polling the task's queue neither
signal nor cancel can act, so it is terminated at once. Either way it ends within 15 s.
"""

from __future__ import annotations

import argparse
import asyncio

from temporalio.client import Client, WorkflowExecutionStatus

from cli.background import connect
from cli.options import seconds
from cli.tasks import closed_outcome, running
from cli.workers import queue_polled
from workflows.task import AgentTaskWorkflow

GRACE_S = 5.0


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("stop", help="stop a task (it ends as FAILED, stopped; or is cancelled, then terminated)")
    s.add_argument("id")
    s.add_argument("--reason", default="stopped by user")
    s.add_argument("--grace", type=seconds, default=GRACE_S, metavar="SECONDS",
                   help=f"how long the task gets to end after the stop, then after Temporal's cancel, before it "
                   f"is terminated (default: {GRACE_S:g})")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    desc = await running(client, args.id)
    handle = client.get_workflow_handle(args.id)
    await handle.signal(AgentTaskWorkflow.stop, args.reason)
    print(f"stop requested for {args.id}")
    if not await queue_polled(client, desc.task_queue):
        why = f"no worker polls task queue {desc.task_queue}"
    else:
        if await _ended(client, args.id, args.grace):
            return 0
        await handle.cancel()
        print(f"not ended after {args.grace:g} s: cancel requested")
        if await _ended(client, args.id, args.grace):
            return 0
        why = f"not ended {args.grace:g} s after the cancel"
    await handle.terminate(reason=args.reason)
    print(f"{why}: terminated {args.id} ({args.reason})")
    return 0


async def _ended(client: Client, workflow_id: str, wait_s: float) -> bool:
    """Whether the task closes within ``wait_s``; when it does, how is printed."""
    handle = client.get_workflow_handle(workflow_id)
    deadline = asyncio.get_running_loop().time() + wait_s
    while (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.2)
    outcome = await closed_outcome(client, workflow_id)
    print(f"{workflow_id} ended {outcome.status.value}" + (f": {outcome.error}" if outcome.error else ""))
    return True
