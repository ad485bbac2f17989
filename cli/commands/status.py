"""``status ID [--json]``: a task's state, from its worker while it runs, from its history after."""

from __future__ import annotations

import argparse
import json

from temporalio.client import WorkflowExecutionStatus

from cli.background import connect
from cli.permissions import permission_lines
from cli.render import status_lines
from cli.tasks import QUERY_TIMEOUT, UserError, closed_outcome, describe, finished_status, ui_link
from cli.workers import RESTART_WAIT, ask_status, unpolled_notice


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("status", help="show a task's state")
    s.add_argument("id")
    s.add_argument("--json", action="store_true")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    desc = await describe(client, args.id)
    if desc.status == WorkflowExecutionStatus.RUNNING:
        answer = await ask_status(client, args.id, desc.task_queue, wait=QUERY_TIMEOUT, patience=RESTART_WAIT)
        if answer is None:
            notice = await unpolled_notice(client, desc.task_queue, args.settings.temporal)
            raise UserError(f"task {args.id} is running but no worker answers its status query"
                            + (f"; {notice}" if notice else ""))
        status = answer
    else:
        status = await finished_status(client, desc, await closed_outcome(client, args.id))
    if args.json:
        payload = status.model_dump(mode="json")
        payload.update(workflow_id=args.id, temporal_status=desc.status.name if desc.status else None, ui=ui_link(client, args.id, args.settings.temporal))
        print(json.dumps(payload))
    else:
        lines = status_lines(args.id, status, ui_link(client, args.id, args.settings.temporal))
        lines[-1:-1] = permission_lines(status)  # before the link
        print("\n".join(lines))
    return 0
