"""``record ID --into SUITE``: turn a finished task into an eval case replayed from its history."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli.background import connect
from cli.hints import invoked
from cli.tasks import UserError
from evals.record import record_task
from evals.run import EvalError
from evals.suite import SuiteError
from runtime.checkpoints import Checkpoints


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("record", help="turn a finished task into an eval case replayed from its history")
    s.add_argument("id")
    s.add_argument("--into", required=True, metavar="SUITE", help="the suite file to add the case to (created if missing)")
    s.add_argument("--name", help="the case's name (default: from the task's id)")
    s.add_argument("--workspace", metavar="DIR",
                   help="the files the case starts from (default: the task's workspace as it began)")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    suite = Path(args.into)
    try:
        checkpoints = Checkpoints.from_settings(args.settings.checkpoints, args.settings.paths)
        case, notes = await record_task(client, args.id, suite, checkpoints, name=args.name,
                                        start=Path(args.workspace).resolve() if args.workspace else None)
    except (EvalError, SuiteError) as err:
        raise UserError(str(err)) from None
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"recorded {args.id} as case {case.name} in {suite} ({len(case.graders)} graders); replay it with:\n"
          f"  {invoked(f'eval {suite} --replay --case {case.name}', args.settings.temporal)}")
    return 0
