"""``fork ID --to-turn N``: leave the task alone and start a new one from the end of turn N.

The new task works in a copy of the workspace as it was then, its ``.git`` included (files
the checkpoint left out are not copied, and named), and its first run carries the context of turns 1..N, read
from the task through the ``model_context`` query (as continue-as-new carries it).
"""

from __future__ import annotations

import argparse
import uuid
from datetime import date
from pathlib import Path

from cli.background import connect
from cli.hints import invoked
from cli.tasks import QUERY_TIMEOUT, UserError, describe
from cli.turn_points import left_out_line, turn_point
from cli.workers import RESTART_WAIT, ask
from contracts.activities import ContextPage
from contracts.task import LoopState
from runtime.checkpoints import CheckpointError, Checkpoints
from workflows.task import AgentTaskWorkflow


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser(
        "fork", help="start a new task from the end of a turn of this one, in a copy of its workspace"
    )
    s.add_argument("id")
    s.add_argument("--to-turn", type=int, required=True, metavar="N", help="keep turns 1..N")
    s.add_argument("--workspace", help="where the copy goes (default: beside the original)")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    desc = await describe(client, args.id)
    point = await turn_point(client, args.id, args.to_turn)
    source = Path(point.task.workspace)
    suffix = uuid.uuid4().hex[:6]
    dest = Path(args.workspace).expanduser().resolve() if args.workspace else source.with_name(
        f"{source.name}-fork-{suffix}")
    if dest.exists():
        raise UserError(f"{dest} already exists: give --workspace a new directory")
    checkpoints = Checkpoints.from_settings(args.settings.checkpoints, args.settings.paths)
    page: ContextPage | None = await ask(client, args.id, desc.task_queue, AgentTaskWorkflow.model_context, 0,
                                         wait=QUERY_TIMEOUT, patience=RESTART_WAIT)
    if page is None:
        raise UserError(f"no worker answered within {QUERY_TIMEOUT.total_seconds():g} s to read the task's context: "
                        f"start one ({invoked('worker', args.settings.temporal)}) and fork again")
    entries = [e for e in page.entries if e.turn <= args.to_turn]
    if page.base and page.entries and page.entries[0].turn > args.to_turn:
        raise UserError(f"turn {args.to_turn} is before the task's last continue-as-new: fork from a later turn")
    try:
        commit = checkpoints.state_after(source, args.id, args.to_turn)
        if commit is None:
            turns = checkpoints.turns(source, args.id)
            commit = turns[max(turns)] if turns else None
        if commit is None:
            raise UserError(f"no workspace checkpoints of {args.id} on this host: nothing to copy")
        checkpoints.export(source, commit, dest)
        not_copied = left_out_line(checkpoints.left_out(source, commit), "not copied")
    except CheckpointError as err:
        raise UserError(f"the workspace could not be copied: {err}") from None
    context_id = str(uuid.uuid4())
    carry = LoopState(
        context_id=context_id, base=page.base, entries=entries, prefix=page.prefix if page.base else [],
        synced=page.base, turn=args.to_turn, runs=0, prompt_date=date.today().isoformat(),
    )
    task = point.task.model_copy(update={"workspace": str(dest), "carry": carry, "context_id": context_id})
    workflow_id = f"{args.id}-fork-t{args.to_turn}-{suffix}"
    await client.start_workflow(AgentTaskWorkflow.run, task, id=workflow_id, task_queue=desc.task_queue)
    print(f"forked {args.id} at the end of turn {args.to_turn} into {dest}{not_copied}")
    print(workflow_id)
    return 0
