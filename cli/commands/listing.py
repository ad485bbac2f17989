"""``list``: the tasks, newest first, with how Temporal and the task each see them; with
``--pending``, what each waiting task waits for and the command that answers it."""

from __future__ import annotations

import argparse
import asyncio
from datetime import timedelta

from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus, WorkflowQueryFailedError

from cli.background import connect
from cli.render import approval_text, make_console, safe, shorten
from cli.workers import ask_status, queue_polled
from contracts.task import TASK_WORKFLOW, TaskState
from workflows.search_attributes import AGENT_STATE

PENDING_WAIT = timedelta(seconds=2)  # per waiting task: the list is worth more than one line of it
# How a closed run ended, as a task state: a task Temporal terminated or timed out never got to
# update its AgentState, which still says what it was doing.
CLOSING_STATE = {
    WorkflowExecutionStatus.COMPLETED: TaskState.DONE,
    WorkflowExecutionStatus.FAILED: TaskState.FAILED,
    WorkflowExecutionStatus.CANCELED: TaskState.CANCELLED,
    WorkflowExecutionStatus.TERMINATED: TaskState.TERMINATED,
    WorkflowExecutionStatus.TIMED_OUT: TaskState.TIMED_OUT,
}


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("list", help="list tasks")
    s.add_argument("--limit", type=int, default=50)
    s.add_argument("--pending", "--waiting", dest="pending", action="store_true",
                   help="only tasks waiting for a person (sub-agents too, with whose they are)")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    console = make_console()
    query = f"WorkflowType = '{TASK_WORKFLOW}'"
    if args.pending:
        query += " AND AgentState IN ('WAITING_APPROVAL', 'WAITING_REPLY') AND ExecutionStatus = 'Running'"
    found = [wf async for wf in client.list_workflows(query, limit=args.limit)]
    waits = await asyncio.gather(*(waiting_for(client, wf) for wf in found)) if args.pending else [None] * len(found)
    for wf, wait in zip(found, waits):
        started = wf.start_time.strftime("%Y-%m-%d %H:%M:%S") if wf.start_time else "-"
        status = wf.status.name if wf.status else "-"
        whose = f"  sub-agent of {safe(wf.parent_id)}" if wf.parent_id else ""
        console.print(f"{safe(wf.id):<50} {status:<10} {safe(listed_state(wf)):<17} {started}{whose}")
        if wait:
            console.print(f"    {wait}")
    if not found:
        console.print("no tasks waiting for a person" if args.pending else "no tasks yet")
    return 0


def listed_state(wf: WorkflowExecution) -> str:
    """The task's state: its AgentState, or for a closed run whose AgentState is not an end
    (Temporal ended it), how it closed."""
    state = wf.typed_search_attributes.get(AGENT_STATE)
    closing = CLOSING_STATE.get(wf.status) if wf.status else None
    if closing is not None and state not in [s.value for s in TaskState if s.finished]:
        return closing.value
    return state or "-"


async def waiting_for(client: Client, wf: WorkflowExecution) -> str | None:
    """What a waiting task waits for, as one line (from its status query, when a worker
    answers within a moment), and the command that answers it."""
    if not await queue_polled(client, wf.task_queue):
        return None
    try:
        status = await ask_status(client, wf.id, wf.task_queue, wait=PENDING_WAIT, say=None)
    except WorkflowQueryFailedError:
        return None
    if status is None:
        return None
    root = wf.root_id or wf.parent_id or wf.id
    if status.pending_approval is not None:
        p = status.pending_approval
        return (f"{safe(p.tool)}: {safe(shorten(approval_text(p), 100))} ({safe(p.danger)}) · "
                f"python starter.py approve {safe(root)}")
    if status.question is not None:
        return f"asks: {safe(shorten(status.question, 100))} · python starter.py reply {safe(wf.id)} \"TEXT\""
    return None
