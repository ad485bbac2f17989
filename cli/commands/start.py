"""``start TASK``: start a task and print its workflow id as the last line.

On the embedded default a background worker with its model settings runs it (cli/background.py); on a cluster where
no worker polls the task queue, one line says what to run, instead of the task waiting unseen.
"""

from __future__ import annotations

import argparse
import sys

from cli.background import connect_serving
from cli.hints import invoked
from cli.options import add_task_options
from cli.tasks import configured_model, start_task, task_input
from cli.workers import unpolled_notice


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("start", help="start a task and print its id")
    s.add_argument("task", help="the instruction")
    add_task_options(s)
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    inp = task_input(args, configured_model(args))
    client, queue = await connect_serving(args.settings)
    workflow_id = await start_task(client, inp, queue, args.settings.temporal, conversation=True)
    print(f"started; follow it with: {invoked(f'watch {workflow_id}', args.settings.temporal)}", file=sys.stderr)
    if notice := await unpolled_notice(client, queue, args.settings.temporal):
        print(notice, file=sys.stderr)
    print(workflow_id)
    return 0
