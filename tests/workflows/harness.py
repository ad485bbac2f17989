"""Run a task on the real dev server with the model played by a scripted HTTP server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle

from contracts.task import ApprovalDecision, TaskInput, TaskOutcome, TaskState, TaskStatus
from core.settings import ProviderSettings
from fakes.scripted import ScriptedModelServer
from fakes.step import Step
from tests import configured
from worker import build_worker
from workflows.policy import failed_outcome
from workflows.task import AgentTaskWorkflow


def make_input(workspace: Path, instruction: str = "do the thing", **overrides) -> TaskInput:
    """A task for a scripted model. Verification is off unless a test turns it on: a script
    holds every reply, and a verification reminder (workflows/verify.py) would ask for one more."""
    fields: dict[str, Any] = dict(instruction=instruction, workspace=str(workspace), model="scripted-model",
                                  stream=False, verify="off")
    fields.update(overrides)
    return TaskInput(**fields)


@asynccontextmanager
async def scripted_worker(
    client: Client, task_queue: str, steps: Sequence[Step], server: dict[str, Any] | None = None,
    **settings_overrides,
) -> AsyncIterator[ScriptedModelServer]:
    """A worker whose model (OpenAI and Anthropic wires alike) is a scripted local server
    (``server``: its options, e.g. the llama.cpp behaviours ``streams_tools`` and ``window``)."""
    with ScriptedModelServer(steps, **(server or {})) as model:
        fields = dict(
            openai_base_url=model.url, openai_api_key="test-key",
            anthropic_base_url=model.anthropic_url, anthropic_api_key="test-key",
        )
        settings = ProviderSettings(**{**fields, **settings_overrides})
        async with build_worker(client, queue=task_queue, settings=settings, config=configured.settings()):
            yield model


async def start(client: Client, task_queue: str, inp: TaskInput) -> WorkflowHandle:
    return await client.start_workflow(
        AgentTaskWorkflow.run, inp, id=f"test-task-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )


async def run_task(client: Client, task_queue: str, inp: TaskInput) -> TaskOutcome:
    return await outcome_of(await start(client, task_queue, inp))


async def outcome_of(handle: WorkflowHandle) -> TaskOutcome:
    """The task's outcome, whether its workflow completed or failed (a FAILED task's workflow
    execution fails, carrying the outcome)."""
    try:
        return await handle.result()
    except WorkflowFailureError as err:
        outcome = failed_outcome(err)
        assert outcome is not None, f"the workflow failed without a task outcome: {err.cause}"
        return outcome


async def wait_for_state(handle: WorkflowHandle, state, timeout_s: float = 20.0):
    """Poll the status query until the task is in ``state``; return that status."""
    import asyncio


    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        status: TaskStatus = await handle.query(AgentTaskWorkflow.status)
        if status.state == state:
            return status
        assert asyncio.get_running_loop().time() < deadline, f"still {status.state}, wanted {state}"
        await asyncio.sleep(0.05)


async def wait_until(predicate, timeout_s: float = 20.0) -> None:
    import asyncio

    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def user_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


async def signals_handled(handle: WorkflowHandle, timeout_s: float = 20.0) -> None:
    """Returns once every signal the run has received was handled: a ``WorkflowTaskCompleted``
    follows its last ``WorkflowExecutionSignaled`` in the history. The barrier after which what
    a signal did, or did not do, can be seen, where a fixed sleep would only hope so."""
    import asyncio

    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        kinds = [e.event_type async for e in handle.fetch_history_events()]
        signalled = [i for i, kind in enumerate(kinds) if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]
        if signalled and EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED in kinds[signalled[-1]:]:
            return
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting for the signals to be handled"
        await asyncio.sleep(0.05)


async def heartbeat_recorded(handle: WorkflowHandle, timeout_s: float = 30.0) -> None:
    """Returns once the server holds a heartbeat of the run's running activity (its details)."""
    import asyncio

    deadline = asyncio.get_running_loop().time() + timeout_s
    while not any(a.heartbeat_details.payloads for a in (await handle.describe()).raw_description.pending_activities):
        assert asyncio.get_running_loop().time() < deadline, "no heartbeat reached the server"
        await asyncio.sleep(0.05)


async def activities_scheduled(handle: WorkflowHandle, activity_type: str) -> int:
    """How many activities of ``activity_type`` the run has scheduled so far (its history)."""
    events = [e async for e in handle.fetch_history_events()]
    return sum(1 for e in events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
               and e.activity_task_scheduled_event_attributes.activity_type.name == activity_type)


async def decide_each(
    handle: WorkflowHandle, decide: Callable[[TaskStatus], ApprovalDecision], *, timeout_s: float = 120.0,
    each_poll: Callable[[], None] = lambda: None,
) -> list[TaskStatus]:
    """Poll the task until it ends, answering each call it waits on with ``decide(status)``;
    ``each_poll`` runs at every poll (every 50 ms). Returns the statuses that asked, in order."""
    asked: list[TaskStatus] = []
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        status: TaskStatus = await handle.query(AgentTaskWorkflow.status)
        assert asyncio.get_running_loop().time() < deadline, f"stuck: {status}"
        if status.state in (TaskState.DONE, TaskState.FAILED):
            return asked
        if status.state == TaskState.WAITING_APPROVAL:
            asked.append(status)
            await handle.execute_update(AgentTaskWorkflow.decide, decide(status))
        each_poll()
        await asyncio.sleep(0.05)
