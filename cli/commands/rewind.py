"""``rewind ID --to-turn N``: take a task back to the end of turn N, running or finished.

The workflow is reset (Temporal's reset) to the workflow task that scheduled turn N+1's model
call: the history up to there is kept, the rest undone, signals sent after it not reapplied.
First the workspace is restored from the checkpoint taken before the first change after turn N
(``runtime/checkpoints.py``); files the checkpoints left out are named and left as they are.
"""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import ResetReapplyType
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.service import RPCError

from cli.background import connect
from cli.hints import invoked
from cli.tasks import UserError, describe, who
from cli.turn_points import left_out_line, turn_point
from runtime.checkpoints import CheckpointError, Checkpoints
from runtime.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser(
        "rewind", help="take a task back to the end of a turn: its workspace restored, later turns undone"
    )
    s.add_argument("id")
    s.add_argument("--to-turn", type=int, required=True, metavar="N", help="keep turns 1..N")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    print(await rewind_task(client, args.id, args.to_turn, args.settings))
    return 0


async def rewind_task(client: Client, task_id: str, turn: int, settings: Settings) -> str:
    """Take the task back to the end of ``turn`` (its workspace first); what was done, in words.
    ``run`` and the conversation's ``/rewind`` (cli/conversation.py) share it."""
    await describe(client, task_id)
    point = await turn_point(client, task_id, turn)
    said = restore_workspace(task_id, Path(point.task.workspace), turn,
                             Checkpoints.from_settings(settings.checkpoints, settings.paths))
    try:
        reply = await client.workflow_service.reset_workflow_execution(ResetWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=task_id, run_id=point.run_id),
            reason=f"rewind to the end of turn {turn} by {who()}",
            workflow_task_finish_event_id=point.event_id,
            request_id=str(uuid.uuid4()),
            reset_reapply_type=ResetReapplyType.RESET_REAPPLY_TYPE_NONE,
        ))
    except RPCError as err:
        raise UserError(f"Temporal refused the reset: {err.message}") from None
    return (f"{said}\ntask {task_id} rewound to the end of turn {turn}; it continues on run {reply.run_id} "
            f"(follow it with: {invoked(f'watch {task_id}', settings.temporal)})")


def restore_workspace(task_id: str, workspace: Path, turn: int, checkpoints: Checkpoints) -> str:
    """Put the workspace back as it was at the end of ``turn``; what was done, in words."""
    try:
        commit = checkpoints.state_after(workspace, task_id, turn)
        if commit is None:
            if not checkpoints.turns(workspace, task_id):
                return "no workspace checkpoints of this task on this host: the workspace was left as it is"
            return "the workspace has not changed since that turn"
        left = checkpoints.restore(workspace, commit)
    except CheckpointError as err:
        raise UserError(f"the workspace could not be restored: {err}") from None
    said = f"workspace restored to the end of turn {turn} (checkpoint {commit[:10]})"
    return said + left_out_line(left, "left as they are")
