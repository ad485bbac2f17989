"""``schedule create|list|trigger|delete``: tasks that start themselves on a cron or interval
schedule (the Temporal side is ``cli/task_schedules.py``). ``trigger`` prints the started
task's workflow id last; ``delete`` leaves the tasks already started running."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

from cli.background import connect, connect_serving
from cli.hints import invoked
from cli.options import add_task_options
from cli.render import safe, shorten
from cli.task_listing import Listed, age_text, cost_text, rows_of
from cli.task_schedules import (
    OVERLAP_POLICIES,
    ScheduleError,
    ScheduleSummary,
    create_task_schedule,
    delete_task_schedule,
    describe_task_schedule,
    list_task_schedules,
    parse_interval,
    schedule_id,
    trigger_task_schedule,
)
from cli.tasks import UserError, configured_model, task_input
from contracts.channels import conversation_id
from temporal.client import ensure_search_attributes, is_embedded


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("schedule", help="run a task on a schedule (create, list, trigger, delete)")
    sub = p.add_subparsers(dest="schedule_command", required=True)

    s = sub.add_parser("create", help="create a schedule that starts a task at each tick")
    s.add_argument("name", help="schedule name: lower-case letters, digits, '-' and '_'")
    s.add_argument("task", help="the instruction")
    when = s.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", help='cron expression, in UTC, e.g. "0 9 * * 1-5" (09:00 on weekdays)')
    when.add_argument("--every", help="an interval instead: 30s, 5m, 2h, 1d")
    add_task_options(s)
    s.add_argument("--overlap", choices=list(OVERLAP_POLICIES), default="skip",
                   help="when a tick comes while the last run is still going (default: skip it)")
    s.add_argument("--note", default="", help="a note shown with the schedule in Temporal")
    s.add_argument("--report-to", metavar="CHAT",
                   help="post each run's approvals and result to this chat conversation, by its key "
                        "(channel:conversation, e.g. matrix:!room:example.org); the gateway must have seen it")

    s = sub.add_parser("list", help="list schedules: cron, next run, last run")
    s.add_argument("--json", action="store_true", help="the schedules as one JSON array")
    for name, help_text in (("trigger", "start the schedule's task now"), ("delete", "delete a schedule")):
        s = sub.add_parser(name, help=help_text)
        s.add_argument("name")
    p.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    command = {"create": _create, "list": _list, "trigger": _trigger, "delete": _delete}[args.schedule_command]
    try:
        return await command(args)
    except ScheduleError as err:
        raise UserError(str(err)) from None


# ---- subcommands -------------------------------------------------------------------


async def _create(args: argparse.Namespace) -> int:
    schedule_id(args.name)  # a bad name fails before anything is written or sent
    every = parse_interval(args.every) if args.every else None
    inp = task_input(args, configured_model(args))
    if args.report_to:
        inp.conversation = conversation_id(args.report_to)
    client, queue = await connect_serving(args.settings)  # its runs go to the worker with these model settings
    inp.search_attributes = await ensure_search_attributes(client, register=is_embedded(args.settings.temporal))
    await create_task_schedule(
        client, args.name, args.cron, inp, task_queue=queue, overlap=args.overlap, note=args.note, every=every,
    )
    summary = await describe_task_schedule(client, args.name)
    if not is_embedded(args.settings.temporal):
        print(f"runs need a worker: {invoked('worker', args.settings.temporal)} (task queue {queue})", file=sys.stderr)
    print(f"created schedule {summary.name}: {summary.when}, next run {_time(summary.next_runs)}")
    return 0


async def _list(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    schedules = await list_task_schedules(client)
    last = await rows_of(client, [s.last_run.workflow_id for s in schedules if s.last_run])
    if args.json:
        print(json.dumps([_listed(summary, last) for summary in schedules], ensure_ascii=False))
    elif schedules:
        print(HEADER)
        for summary in schedules:
            print(_line(summary, last))
    else:
        print("no schedules yet")
    return 0


async def _trigger(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    workflow_id = await trigger_task_schedule(client, args.name)
    if workflow_id is None:
        summary = await describe_task_schedule(client, args.name)
        last = summary.last_run
        if last is not None and last.status == "RUNNING":
            print(f"skipped: {last.workflow_id} is still running (overlap policy {summary.overlap})")
        else:
            print(f"triggered {args.name}; no task seen yet: check with {invoked('schedule list', args.settings.temporal)}")
        return 0
    print(f"started; follow it with: {invoked(f'watch {workflow_id}', args.settings.temporal)}", file=sys.stderr)
    print(workflow_id)
    return 0


async def _delete(args: argparse.Namespace) -> int:
    await delete_task_schedule(await connect(args.settings), args.name)
    print(f"deleted schedule {args.name} (tasks it started run on)")
    return 0


# ---- helpers -----------------------------------------------------------------------


# The columns of `list` where they apply: the last run's state, turn, cost and age, and the
# schedule's instruction.
COLUMNS = "{name:<20} {when:<16} {next:<19} {last:<44} {state:<16} {turn:>4} {cost:>8} {age:>4}  {instruction}"
HEADER = COLUMNS.format(name="SCHEDULE", when="WHEN", next="NEXT RUN (UTC)", last="LAST RUN", state="STATE",
                        turn="TURN", cost="COST", age="AGE", instruction="INSTRUCTION")


def _line(s: ScheduleSummary, last_rows: dict[str, Listed]) -> str:
    last = s.last_run
    row = last_rows.get(last.workflow_id) if last else None
    state = row.state if row else last.status if last else "-"
    paused = "  (paused)" if s.paused else ""
    return COLUMNS.format(
        name=s.name, when=s.when, next=_time(s.next_runs), last=last.workflow_id if last else "-", state=state,
        turn="-" if row is None or row.turn is None else row.turn, cost=cost_text(row.cost_usd if row else None),
        age=age_text(row.age_s if row else None), instruction=safe(shorten(" ".join(s.instruction.split()), 60)),
    ) + paused


def _listed(s: ScheduleSummary, last_rows: dict[str, Listed]) -> dict[str, Any]:
    """A schedule as ``schedule list --json`` gives it; its last run with the fields of ``list``."""
    last = s.last_run
    row = last_rows.get(last.workflow_id) if last else None
    return {
        "name": s.name, "schedule_id": s.schedule_id, "cron": s.cron,
        "every_s": s.every.total_seconds() if s.every else None, "overlap": s.overlap, "paused": s.paused,
        "note": s.note, "instruction": s.instruction, "next_runs": [t.isoformat() for t in s.next_runs],
        "last_run": {
            "workflow_id": last.workflow_id, "status": last.status, "started_at": last.started_at.isoformat(),
            "state": row.state if row else last.status, "turn": row.turn if row else None,
            "cost_usd": row.cost_usd if row else None, "age_s": row.age_s if row else None,
        } if last else None,
        "runs": s.runs, "skipped_overlap": s.skipped_overlap,
    }


def _time(times: list[datetime]) -> str:
    return times[0].strftime("%Y-%m-%d %H:%M:%S") if times else "-"
