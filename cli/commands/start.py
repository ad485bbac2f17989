"""``start TASK``: start a task and print its workflow id as the last line."""

from __future__ import annotations

import argparse
import sys

from cli.options import add_task_options
from cli.tasks import configured_model, start_task, task_input
from temporal.client import connect
from worker import task_queue


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("start", help="start a task and print its id")
    s.add_argument("task", help="the instruction")
    add_task_options(s)
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    inp = task_input(args, configured_model(args))
    client = await connect(args.settings)
    workflow_id = await start_task(client, inp, task_queue(args.settings.temporal), args.settings.temporal,
                                   conversation=True)
    print(f"started; follow it with: python starter.py watch {workflow_id}", file=sys.stderr)
    print(workflow_id)
    return 0
