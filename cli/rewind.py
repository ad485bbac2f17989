"""``rewind`` and ``fork``: take a task back to the end of an earlier turn.

``rewind ID --to-turn N`` finds, in the task's history, the workflow task that scheduled
the model call of turn N+1 and resets the workflow to it (Temporal's reset: the history up
to there is kept, everything after is undone, and the task continues from there on a new
run; signals sent after that point are not reapplied). Before the reset, the workspace is
restored from the checkpoint taken before the first change after turn N
(``runtime/checkpoints.py``), and files the checkpoints leave out (over the size limit) are
named: they are left as they are. It works on running and finished tasks alike.

``fork ID --to-turn N`` leaves the task alone and starts a new one: a copy of the workspace
as it was at the end of turn N, and the context of turns 1..N carried into the new task's
first run (as continue-as-new carries it).
"""

from __future__ import annotations

import argparse
import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, ResetReapplyType
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.service import RPCError

from cli.tasks import UserError, describe, who
from cli.workers import RESTART_WAIT, ask
from contracts.activities import LLM_ACTIVITY, ContextPage, LlmCallInput
from contracts.task import LoopState, TaskInput
from runtime.checkpoints import CheckpointError, Checkpoints, LeftOut
from workflows.task import AgentTaskWorkflow

QUERY_TIMEOUT = timedelta(seconds=5)


@dataclass
class TurnPoint:
    run_id: str
    event_id: int  # the WorkflowTaskCompleted event that scheduled turn N+1's model call
    task: TaskInput  # the run's input


async def turn_point(client: Client, workflow_id: str, turn: int) -> TurnPoint:
    """Where turn ``turn`` ended in the task's history: newest run first (a task that
    continued as new has several)."""
    if turn < 1:
        raise UserError("--to-turn must be 1 or more")
    runs = [wf.run_id async for wf in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
    if not runs:
        runs = [(await describe(client, workflow_id)).run_id]
    last_turn = 0
    for run_id in runs:
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        events = (await handle.fetch_history()).events
        started = events[0].workflow_execution_started_event_attributes
        (task,) = await client.data_converter.decode(list(started.input.payloads), [TaskInput])
        completed = 0
        for event in events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                completed = event.event_id
            elif (event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
                  and event.activity_task_scheduled_event_attributes.activity_type.name == LLM_ACTIVITY):
                attrs = event.activity_task_scheduled_event_attributes
                (call,) = await client.data_converter.decode(list(attrs.input.payloads), [LlmCallInput])
                last_turn = max(last_turn, call.turn)
                if call.turn == turn + 1:
                    return TurnPoint(run_id=run_id, event_id=completed, task=task)
    raise UserError(f"task {workflow_id} never started turn {turn + 1} (its last turn is {last_turn}): "
                    f"nothing after turn {turn} to undo")


def restore_workspace(task_id: str, workspace: Path, turn: int, checkpoints: Checkpoints) -> str:
    """Put the workspace back as it was at the end of ``turn``; what was done, in words."""
    try:
        commit = checkpoints.state_after(workspace, task_id, turn)
        if commit is None:
            if not checkpoints.turns(workspace, task_id):
                return "no workspace checkpoints of this task on this host: the workspace was left as it is"
            return "the workspace has not changed since that turn"
        left = checkpoints.left_out(workspace, commit)
        left += checkpoints.restore(workspace, commit)
    except CheckpointError as err:
        raise UserError(f"the workspace could not be restored: {err}") from None
    said = f"workspace restored to the end of turn {turn} (checkpoint {commit[:10]})"
    return said + left_out_line(left, "left as they are")


def left_out_line(files: list[LeftOut], what: str) -> str:
    """The files the checkpoints left out (over the size limit), once each, as a line to add."""
    named = {f.path: f for f in files}
    if not named:
        return ""
    return f"\nover the checkpoint size limit, so {what}: " + ", ".join(
        named[p].describe() for p in sorted(named))


async def cmd_rewind(args: argparse.Namespace) -> int:
    from temporal.client import connect

    client = await connect()
    await describe(client, args.id)
    point = await turn_point(client, args.id, args.to_turn)
    said = restore_workspace(args.id, Path(point.task.workspace), args.to_turn, Checkpoints())
    try:
        reply = await client.workflow_service.reset_workflow_execution(ResetWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=args.id, run_id=point.run_id),
            reason=f"rewind to the end of turn {args.to_turn} by {who()}",
            workflow_task_finish_event_id=point.event_id,
            request_id=str(uuid.uuid4()),
            reset_reapply_type=ResetReapplyType.RESET_REAPPLY_TYPE_NONE,
        ))
    except RPCError as err:
        raise UserError(f"Temporal refused the reset: {err.message}") from None
    print(said)
    print(f"task {args.id} rewound to the end of turn {args.to_turn}; it continues on run {reply.run_id} "
          f"(follow it with: python starter.py watch {args.id})")
    return 0


async def cmd_fork(args: argparse.Namespace) -> int:
    from temporal.client import connect

    client = await connect()
    desc = await describe(client, args.id)
    point = await turn_point(client, args.id, args.to_turn)
    source = Path(point.task.workspace)
    suffix = uuid.uuid4().hex[:6]
    dest = Path(args.workspace).expanduser().resolve() if args.workspace else source.with_name(
        f"{source.name}-fork-{suffix}")
    if dest.exists():
        raise UserError(f"{dest} already exists: give --workspace a new directory")
    checkpoints = Checkpoints()
    page: ContextPage | None = await ask(client, args.id, desc.task_queue, AgentTaskWorkflow.model_context, 0,
                                         wait=QUERY_TIMEOUT, patience=RESTART_WAIT)
    if page is None:
        raise UserError(f"no worker answered within {QUERY_TIMEOUT.total_seconds():g} s to read the task's context: "
                        "start one (python worker.py) and fork again")
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
