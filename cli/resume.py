"""Which conversation ``run --continue`` and ``run --resume ID`` pick up: its session (what the
next task starts from) and its latest task (followed first while it runs). A conversation is
found through Temporal (a task's input names its session; the list finds a session's tasks
by ``AgentSession`` and the newest task of a workspace by its memo), so it can be picked up
from any host. Picking one up shows its last exchanges first, so the person sees where it
stands before typing the next message."""

from __future__ import annotations

import argparse

from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus
from temporalio.service import RPCError

from cli.hints import invoked
from cli.render import shorten
from cli.tasks import UserError, closed_outcome, describe, started_input
from contracts.task import TASK_WORKFLOW
from core.settings import TemporalSettings

SCAN = 200  # tasks looked at, newest first, for the newest conversation of a workspace
REPLAYED = 5  # exchanges shown when a conversation is picked up
ASKED_SHOWN = 300  # characters of an instruction shown (a pasted file can be long)


async def picked_up(client: Client, args: argparse.Namespace, workspace: str) -> tuple[str | None, str | None]:
    """(session, its latest task) of the conversation the options name: ``--resume ID``,
    ``--continue`` (the newest in ``workspace``), or ``--session NAME`` with no task yet."""
    resume, latest = getattr(args, "resume", None), getattr(args, "continue_", False)
    if (resume or latest) and args.session:
        raise UserError("--session starts or joins a named conversation; --resume and --continue pick one: give one")
    if resume:
        return await resumed(client, resume)
    if latest:
        return await newest_in(client, workspace, args.settings.temporal)
    return args.session, None


async def resumed(client: Client, name: str) -> tuple[str, str | None]:
    """A task id (its session), or a session's name (its newest task, when the list has it)."""
    try:
        desc = await describe(client, name)
    except UserError:  # no task by that id: a session's name
        return name, await latest_of(client, name)
    session = await session_of(client, desc)
    if session is None:
        raise UserError(f"task {name} has no conversation to continue: it was started without a session")
    return session, desc.id


async def session_of(client: Client, execution: WorkflowExecution) -> str | None:
    inp = await started_input(client, execution)
    return inp.session if inp is not None else None


async def session_tasks(client: Client, session: str, limit: int = 100) -> list[str]:
    """The session's tasks, newest first, as far as the list knows them (nothing when the
    ``AgentSession`` attribute is not registered)."""
    if "'" in session:
        return []
    query = f"WorkflowType = '{TASK_WORKFLOW}' AND AgentSession = '{session}'"
    try:
        return [wf.id async for wf in client.list_workflows(query, limit=limit) if not wf.parent_id]
    except RPCError:
        return []


async def latest_of(client: Client, session: str) -> str | None:
    tasks = await session_tasks(client, session, limit=1)
    if not tasks:
        raise UserError(f"no task or conversation with id {session}")
    return tasks[0]


async def newest_in(client: Client, workspace: str, temporal: TemporalSettings) -> tuple[str, str]:
    """The conversation of the newest task started in ``workspace`` (sub-agents aside)."""
    async for wf in client.list_workflows(f"WorkflowType = '{TASK_WORKFLOW}'", limit=SCAN):
        if wf.parent_id or await wf.memo_value("workspace", default=None) != workspace:
            continue
        session = await session_of(client, wf)
        if session:
            return session, wf.id
    start = invoked('run "TASK"', temporal)
    raise UserError(f"no conversation to continue in {workspace}: start one with: {start}")


async def earlier_exchanges(client: Client, session: str, limit: int = REPLAYED) -> list[tuple[str, str]]:
    """(what the person asked, what the agent answered) of the session's last ``limit``
    finished tasks, oldest first; a task that still runs is followed live instead."""
    exchanges = []
    for workflow_id in reversed(await session_tasks(client, session, limit=limit)):
        desc = await describe(client, workflow_id)
        if desc.status == WorkflowExecutionStatus.RUNNING:
            continue
        inp = await started_input(client, desc)
        outcome = await closed_outcome(client, workflow_id)
        answer = outcome.final_text or outcome.error or outcome.status.name
        exchanges.append((shorten(inp.instruction if inp else "(its instruction is not readable)", ASKED_SHOWN), answer))
    return exchanges
