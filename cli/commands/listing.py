"""``list``: the tasks under a header (state, turn, cost, age, the start of the instruction),
sub-agents indented under their parent; with ``--pending``, what each waiting task waits for
and the command that answers it; with ``--json``, one JSON array of the same rows.

``--state``, ``--session``, ``--since`` and ``--pending`` are clauses of one Temporal list
query (cli/task_listing.py); when ``--limit`` cuts the list, it says how many more there are
and how to see them."""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from dataclasses import asdict
from datetime import UTC, timedelta

from temporalio.client import Client, WorkflowExecution, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from cli.background import connect
from cli.hints import invoked
from cli.render import approval_text, make_console, safe, shorten
from cli.task_listing import (
    STATES,
    Listed,
    Page,
    TaskFilter,
    Waiting,
    age_text,
    cost_text,
    find,
    parse_states,
    quoted,
    since_now,
)
from cli.tasks import UserError
from cli.workers import ask_status, queue_polled
from core.settings import TemporalSettings
from temporal.server import SEARCH_ATTRIBUTES

PENDING_WAIT = timedelta(seconds=2)  # per waiting task: the list is worth more than one line of it
DEFAULT_LIMIT = 20
INSTRUCTION_SHOWN = 60
COLUMNS = "{id:<48} {state:<16} {turn:>4} {cost:>8} {age:>4}  {instruction}"
HEADER = COLUMNS.format(id="TASK", state="STATE", turn="TURN", cost="COST", age="AGE", instruction="INSTRUCTION")


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("list", help="list tasks: running ones first, then the latest ended")
    s.add_argument("--pending", "--waiting", dest="pending", action="store_true",
                   help="only tasks waiting for a person (sub-agents too, with whose they are)")
    s.add_argument("--state", type=_states, help=f"only tasks in these states, comma-separated: {', '.join(STATES)}")
    s.add_argument("--session", type=_session, help="only the tasks of this session")
    s.add_argument("--since", type=_since, help="only tasks started since: 30m, 2h, 3d, or a date (2026-11-25, UTC)")
    s.add_argument("--limit", type=_positive, default=DEFAULT_LIMIT, help=f"at most this many rows (default {DEFAULT_LIMIT})")
    s.add_argument("--json", action="store_true", help="the rows as one JSON array")
    s.set_defaults(run=run)


def _states(text: str) -> tuple[str, ...]:
    try:
        return parse_states(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _since(text: str):
    try:
        return since_now(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _session(text: str) -> str:
    try:
        quoted(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"invalid --limit {text!r}: a whole number, at least 1")
    return int(text)


def task_filter(args: argparse.Namespace) -> TaskFilter:
    return TaskFilter(states=args.state or (), session=args.session, since=args.since, pending=args.pending)


async def run(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    try:
        page = await find(client, task_filter(args), args.limit)
    except RPCError as err:
        raise unregistered(err, client.namespace) or err from None
    if args.pending:
        waits = await asyncio.gather(*(waiting_for(client, wf, args.settings.temporal) for wf in page.executions))
        for row, wait in zip(page.rows, waits):
            row.waiting = wait
    if args.json:
        print(json.dumps([asdict(row) for row in page.rows], ensure_ascii=False))
        if page.more:
            print(more_note(page, args), file=sys.stderr)
        return 0
    console = make_console()
    if not page.rows:
        console.print("no tasks waiting for a person" if args.pending else "no tasks found" if _narrowed(args) else "no tasks yet")
        return 0
    console.print(HEADER, style="bold")
    for row in page.rows:
        console.print(line(row), markup=False)
        if row.waiting:
            console.print(f"{'  ' * row.depth}    {row.waiting.line()}", markup=False)
    if page.more:
        console.print(more_note(page, args), markup=False)
    return 0


def _narrowed(args: argparse.Namespace) -> bool:
    return bool(args.state or args.session is not None or args.since)


def line(row: Listed) -> str:
    text = COLUMNS.format(
        id="  " * row.depth + safe(row.workflow_id), state=safe(row.state),
        turn="-" if row.turn is None else row.turn, cost=cost_text(row.cost_usd), age=age_text(row.age_s),
        instruction=safe(shorten(row.instruction, INSTRUCTION_SHOWN)),
    )
    return text + (f"  sub-agent of {safe(row.parent_id)}" if row.parent_id and not row.depth else "")


def unregistered(err: RPCError, namespace: str) -> UserError | None:
    """A query that names a search attribute the namespace lacks is refused as INVALID_ARGUMENT
    (a real cluster, where registering needs operator rights): the line that registers them."""
    if err.status != RPCStatusCode.INVALID_ARGUMENT or not any(name in err.message for name in SEARCH_ATTRIBUTES):
        return None
    pairs = " ".join(f"--name {name} --type {kind}" for name, kind in SEARCH_ATTRIBUTES.items())
    return UserError(f"namespace {namespace} does not have the agent's search attributes, which this filter needs; "
                     f"register them once with: temporal operator search-attribute create --namespace {namespace} {pairs}")


def more_note(page: Page, args: argparse.Namespace) -> str:
    """How many more tasks the query finds than the limit let through, and how to see them:
    this command with a limit that takes them all, or the query for Temporal's own CLI."""
    flags = ["--pending"] if args.pending else []
    if args.state:
        flags += ["--state", ",".join(args.state)]
    if args.session is not None:
        flags += ["--session", args.session]
    if args.since:
        flags += ["--since", args.since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")]
    again = shlex.join(["list", *flags, "--limit", str(page.total)] + (["--json"] if args.json else []))
    return (f"{page.more:,} more not shown ({len(page.rows)} of {page.total:,}): {invoked(again, args.settings.temporal)}\n"
            f"  or: temporal workflow list --query {shell_word(page.query)}")


def shell_word(text: str) -> str:
    """``text`` as one shell word: in double quotes, which read as written when it has no
    ``"$`\\``, else quoted by shlex."""
    return shlex.quote(text) if any(c in text for c in '"$`\\') else f'"{text}"'


async def waiting_for(client: Client, wf: WorkflowExecution, temporal: TemporalSettings) -> Waiting | None:
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
        return Waiting("approval", f"{p.tool}: {approval_text(p)}", invoked(f"approve {root}", temporal), p.danger)
    if status.question is not None:
        return Waiting("reply", status.question, invoked(f'reply {wf.id} "TEXT"', temporal))
    return None
