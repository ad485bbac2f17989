"""What ``rewind`` and ``fork`` share: where a turn ended in a task's history, and a line
naming the files the workspace checkpoints left out (not undoable)."""

from __future__ import annotations

from dataclasses import dataclass

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from cli.tasks import UserError, describe
from contracts.activities import LLM_ACTIVITY, LlmCallInput
from contracts.task import TaskInput
from runtime.checkpoints import LeftOut


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


def left_out_line(files: list[LeftOut], what: str) -> str:
    """The files the checkpoints left out (over the size budget, or not regular files), once
    each, as a line to add."""
    named = {f.path: f for f in files}
    if not named:
        return ""
    return f"\nleft out of the checkpoint, so {what}: " + ", ".join(
        named[p].describe() for p in sorted(named))
