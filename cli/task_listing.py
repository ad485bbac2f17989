"""Finding tasks for ``list``: each filter is one clause of a Temporal visibility query, so the
server narrows the tasks and counts the ones a limit leaves out, never this process. A row
holds what a person scans a list for: state, turn, cost, age, the start of the instruction.

Temporal's SQL visibility (the dev server's, and most clusters') refuses ``ORDER BY``, so the
rows come in Temporal's order: running tasks first, then the most recently ended."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus

from cli.calls import safe
from cli.task_schedules import InvalidSchedule, parse_interval
from contracts.task import TASK_WORKFLOW, TaskState
from core.text import shorten
from workflows.search_attributes import AGENT_COST, AGENT_STATE, AGENT_TURNS, RUNNING

INSTRUCTION_KEPT = 200  # of the instruction, per row (the table shows less)
# How a closed run ended, as a task state: a task Temporal terminated or timed out never got to
# update its AgentState, which still says what it was doing.
CLOSING_STATE = {
    WorkflowExecutionStatus.COMPLETED: TaskState.DONE,
    WorkflowExecutionStatus.FAILED: TaskState.FAILED,
    WorkflowExecutionStatus.CANCELED: TaskState.CANCELLED,
    WorkflowExecutionStatus.TERMINATED: TaskState.TERMINATED,
    WorkflowExecutionStatus.TIMED_OUT: TaskState.TIMED_OUT,
}
# ExecutionStatus as a visibility query spells it.
QUERY_STATUS = {
    TaskState.DONE: "Completed", TaskState.FAILED: "Failed", TaskState.CANCELLED: "Canceled",
    TaskState.TERMINATED: "Terminated", TaskState.TIMED_OUT: "TimedOut",
}
FINISHED = [s.value for s in TaskState if s.finished]
# What --state takes: what AgentState holds while a task runs (its working phases are one
# value, RUNNING), and the end states as ``list`` shows them.
STATES = (RUNNING, *(s.value for s in TaskState if s.waiting or s is TaskState.WAITING_PROVIDER), *FINISHED)


@dataclass(frozen=True)
class TaskFilter:
    """What narrows the list; every field is a clause of ``list_query``."""

    states: tuple[str, ...] = ()
    session: str | None = None
    since: datetime | None = None
    pending: bool = False  # waiting for a person


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
    turn: int | None
    cost_usd: float | None
    started: str  # ISO 8601, UTC; "" when Temporal gave no start time
    age_s: int | None  # seconds since it started
    instruction: str  # its start
    parent_id: str | None
    depth: int = 0  # 1 under a parent on the same page, 2 under that one's sub-agent
    waiting: Waiting | None = None  # with --pending, when a worker answers


@dataclass
class Page:
    """The rows a limit let through (parents before their sub-agents), and how many tasks the
    same query finds in all."""

    rows: list[Listed]
    executions: list[WorkflowExecution]  # the same, in the same order
    total: int
    query: str

    @property
    def more(self) -> int:
        return max(0, self.total - len(self.rows))


# ---- the query -----------------------------------------------------------------------


def list_query(f: TaskFilter) -> str:
    """The visibility query for ``f``: tasks (one row per task: runs a task continued from as
    new are left out), narrowed by each filter given."""
    clauses = [f"WorkflowType = '{TASK_WORKFLOW}'", "ExecutionStatus != 'ContinuedAsNew'"]
    if f.pending:
        clauses.append("AgentState IN ('WAITING_APPROVAL', 'WAITING_REPLY') AND ExecutionStatus = 'Running'")
    if f.states:
        clauses.append("(" + " OR ".join(state_clause(s) for s in f.states) + ")")
    if f.session is not None:
        clauses.append(f"AgentSession = {quoted(f.session)}")
    if f.since is not None:
        clauses.append(f"StartTime >= '{f.since.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}'")
    return " AND ".join(clauses)


def state_clause(state: str) -> str:
    """The tasks ``list`` shows in ``state``: a running one by its AgentState; an ended one by
    its AgentState, or by how Temporal closed it when the task never got to say (as
    ``listed_state`` reads a row)."""
    if state not in FINISHED:
        return f"(AgentState = '{state}' AND ExecutionStatus = 'Running')"
    ended = ", ".join(f"'{s}'" for s in FINISHED)
    return (f"(AgentState = '{state}' OR (ExecutionStatus = '{QUERY_STATUS[TaskState(state)]}' "
            f"AND AgentState NOT IN ({ended})))")


def quoted(value: str) -> str:
    """A string literal of the query language, a quote in it doubled. The dev server's
    visibility (tried) matches no value with a backslash, nor one that starts or ends with a
    quote, however written: such a value is refused (ValueError) rather than matched wrongly."""
    if "\\" in value or value.startswith("'") or value.endswith("'"):
        raise ValueError(f"cannot look up {value!r}: Temporal's list queries match no value with a backslash "
                         "or a quote at either end")
    return "'" + value.replace("'", "''") + "'"


def parse_states(text: str) -> tuple[str, ...]:
    """``done`` or ``waiting_approval,waiting_reply``: ValueError names the states there are."""
    states = tuple(part.strip().upper() for part in text.split(",") if part.strip())
    unknown = [s for s in states if s not in STATES]
    if unknown or not states:
        raise ValueError(f"unknown state {', '.join(unknown) or repr(text)}: use one or more of {', '.join(STATES)}")
    return states


def parse_since(text: str, now: datetime) -> datetime:
    """``30m``, ``2h``, ``3d`` before ``now``, or an ISO date or time (UTC unless it says)."""
    try:
        return now - parse_interval(text)
    except InvalidSchedule:
        pass
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"invalid --since {text!r}: use e.g. 30m, 2h, 3d, or a date such as 2026-11-25") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


# ---- the rows ------------------------------------------------------------------------


async def find(client: Client, f: TaskFilter, limit: int) -> Page:
    """The first ``limit`` tasks ``f`` lets through, and how many it lets through in all."""
    query = list_query(f)
    found, counted = await asyncio.gather(
        _collect(client, query, limit), client.count_workflows(query),
    )
    now = datetime.now(UTC)
    rows = await asyncio.gather(*(listed(client, wf, now) for wf in found))
    ordered = nested(list(zip(rows, found)))
    return Page([r for r, _ in ordered], [wf for _, wf in ordered], max(counted.count, len(found)), query)


async def rows_of(client: Client, workflow_ids: list[str]) -> dict[str, Listed]:
    """The rows of these tasks (``schedule list``: each schedule's last run), by id; a task
    the listing does not have yet (visibility lags a start by a moment) is left out."""
    if not workflow_ids:
        return {}
    query = (f"WorkflowId IN ({', '.join(quoted(i) for i in workflow_ids)}) "
             f"AND ExecutionStatus != 'ContinuedAsNew'")
    now = datetime.now(UTC)
    found = await _collect(client, query, len(workflow_ids) * 2)
    return {row.workflow_id: row for row in await asyncio.gather(*(listed(client, wf, now) for wf in found))}


async def _collect(client: Client, query: str, limit: int) -> list[WorkflowExecution]:
    return [wf async for wf in client.list_workflows(query, limit=limit)]


def nested(rows: list[tuple[Listed, WorkflowExecution]]) -> list[tuple[Listed, WorkflowExecution]]:
    """Each sub-agent right under its parent when the parent is on the page (deeper by one),
    the rest in the order they came."""
    ids = {row.workflow_id for row, _ in rows}
    children: dict[str, list[tuple[Listed, WorkflowExecution]]] = {}
    for pair in rows:
        if pair[0].parent_id in ids:
            children.setdefault(pair[0].parent_id or "", []).append(pair)
    out: list[tuple[Listed, WorkflowExecution]] = []

    def place(pair: tuple[Listed, WorkflowExecution], depth: int) -> None:
        pair[0].depth = depth
        out.append(pair)
        for child in sorted(children.get(pair[0].workflow_id, []), key=lambda p: p[0].started):
            place(child, depth + 1)

    for pair in rows:
        if pair[0].parent_id not in ids:
            place(pair, 0)
    return out


async def listed(client: Client, wf: WorkflowExecution, now: datetime) -> Listed:
    attrs = wf.typed_search_attributes
    return Listed(
        workflow_id=wf.id, temporal_status=wf.status.name if wf.status else "-", state=listed_state(wf),
        turn=attrs.get(AGENT_TURNS), cost_usd=attrs.get(AGENT_COST),
        started=wf.start_time.isoformat() if wf.start_time else "",
        age_s=int((now - wf.start_time).total_seconds()) if wf.start_time else None,
        instruction=await instruction_start(client, wf), parent_id=wf.parent_id,
    )


def listed_state(wf: WorkflowExecution) -> str:
    """The task's state: its AgentState, or for a closed run whose AgentState is not an end
    (Temporal ended it), how it closed."""
    state = wf.typed_search_attributes.get(AGENT_STATE)
    closing = CLOSING_STATE.get(wf.status) if wf.status else None
    if closing is not None and state not in FINISHED:
        return closing.value
    return state or "-"


async def instruction_start(client: Client, wf: WorkflowExecution) -> str:
    """The start of the task's instruction, on one line: from the memo the CLI starts a task
    with, else (a sub-agent, started by its parent) from the summary it shows in the UI."""
    try:
        text = str(await wf.memo_value("instruction", default=""))
    except Exception:  # a memo this codec cannot read (another key): the row stays useful
        text = ""
    if not text and wf.parent_id:
        try:
            desc = await client.get_workflow_handle(wf.id, run_id=wf.run_id).describe()
            summary = await desc.static_summary() or ""
        except Exception:  # gone since it was listed, or unreadable
            summary = ""
        text = re.sub(r"^`+ ?|( ?`+)$", "", summary).removeprefix("sub-agent: ")
    return " ".join(text[: INSTRUCTION_KEPT * 2].split())[:INSTRUCTION_KEPT]


def cost_text(cost_usd: float | None) -> str:
    return "-" if cost_usd is None else f"${cost_usd:.4f}" if cost_usd < 1 else f"${cost_usd:.2f}"


def age_text(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit == "d" else 1):
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def since_now(text: str) -> datetime:
    return parse_since(text, datetime.now(UTC))

