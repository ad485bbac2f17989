"""``list``: the tasks, newest first, with how Temporal and the task each see them; with
``--pending``, what each waiting task waits for and the command that answers it. A header
line over the columns, or with ``--json`` one JSON array of the same rows.

A row is a ``Listed`` made from Temporal's listing; what narrows the listing (``--pending``,
and any filter added later) is one more clause of the visibility query in ``query``."""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import asdict, dataclass
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
COLUMNS = "{id:<50} {temporal:<10} {state:<17} {started}"
HEADER = COLUMNS.format(id="TASK", temporal="TEMPORAL", state="STATE", started="STARTED (UTC)")


@dataclass
class Waiting:
    """What a waiting task waits for, and the command that answers it."""

    kind: str  # "approval" or "reply"
    what: str  # the call (tool: command) or the question
    command: str
    danger: str | None = None

    def line(self) -> str:
        if self.kind == "approval":
            return f"{safe(shorten(self.what, 100))} ({safe(self.danger or '')}) · {safe(self.command)}"
        return f"asks: {safe(shorten(self.what, 100))} · {safe(self.command)}"


@dataclass
class Listed:
    """One row of the listing."""

    workflow_id: str
    temporal_status: str
    state: str
    started: str  # ISO 8601, UTC; "" when Temporal gave no start time
    parent_id: str | None
    waiting: Waiting | None = None

    def line(self) -> str:
        started = self.started[:19].replace("T", " ") or "-"
        row = COLUMNS.format(id=safe(self.workflow_id), temporal=self.temporal_status, state=safe(self.state), started=started)
        return row + (f"  sub-agent of {safe(self.parent_id)}" if self.parent_id else "")


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("list", help="list tasks")
    s.add_argument("--limit", type=int, default=50)
    s.add_argument("--pending", "--waiting", dest="pending", action="store_true",
                   help="only tasks waiting for a person (sub-agents too, with whose they are)")
    s.add_argument("--json", action="store_true", help="the rows as one JSON array")
    s.set_defaults(run=run)


def query(args: argparse.Namespace) -> str:
    clauses = [f"WorkflowType = '{TASK_WORKFLOW}'"]
    if args.pending:
        clauses.append("AgentState IN ('WAITING_APPROVAL', 'WAITING_REPLY') AND ExecutionStatus = 'Running'")
    return " AND ".join(clauses)


async def run(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    found = [wf async for wf in client.list_workflows(query(args), limit=args.limit)]
    rows = [listed(wf) for wf in found]
    if args.pending:
        for row, wait in zip(rows, await asyncio.gather(*(waiting_for(client, wf) for wf in found))):
            row.waiting = wait
    if args.json:
        print(json.dumps([asdict(row) for row in rows], ensure_ascii=False))
        return 0
    console = make_console()
    if not rows:
        console.print("no tasks waiting for a person" if args.pending else "no tasks yet")
        return 0
    console.print(HEADER, style="bold")
    for row in rows:
        console.print(row.line())
        if row.waiting:
            console.print(f"    {row.waiting.line()}")
    return 0


def listed(wf: WorkflowExecution) -> Listed:
    return Listed(
        workflow_id=wf.id, temporal_status=wf.status.name if wf.status else "-", state=listed_state(wf),
        started=wf.start_time.isoformat() if wf.start_time else "", parent_id=wf.parent_id,
    )


def listed_state(wf: WorkflowExecution) -> str:
    """The task's state: its AgentState, or for a closed run whose AgentState is not an end
    (Temporal ended it), how it closed."""
    state = wf.typed_search_attributes.get(AGENT_STATE)
    closing = CLOSING_STATE.get(wf.status) if wf.status else None
    if closing is not None and state not in [s.value for s in TaskState if s.finished]:
        return closing.value
    return state or "-"


async def waiting_for(client: Client, wf: WorkflowExecution) -> Waiting | None:
    """What a waiting task waits for (from its status query, when a worker answers within a
    moment), and the command that answers it."""
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
        return Waiting("approval", f"{p.tool}: {approval_text(p)}", f"python starter.py approve {root}", p.danger)
    if status.question is not None:
        return Waiting("reply", status.question, f'python starter.py reply {wf.id} "TEXT"')
    return None
