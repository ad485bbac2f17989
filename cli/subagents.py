"""A task's sub-agents, found through Temporal itself: the running children of its workflow
(``describe``: pending children) and theirs in turn, and what each one waits for (its
``status`` query). A parent waits on one sub-agent at a time, so at most one call in a
task's tree waits for approval."""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import Client, WorkflowExecutionDescription, WorkflowQueryFailedError
from temporalio.service import RPCError

from cli.workers import ANSWER_WAIT, ask_status, worker_absence
from contracts.task import PendingApproval, TaskState, TaskStatus
from workflows.search_attributes import AGENT_STATE

MAX_LEVELS = 4  # sub-agents nest two deep; a bound in case that ever changes


async def running_subagents(client: Client, desc: WorkflowExecutionDescription) -> list[str]:
    """Ids of the running sub-agents under the task ``desc`` describes, nearest first."""
    found: list[str] = []
    level = [child.workflow_id for child in desc.raw_description.pending_children]
    for _ in range(MAX_LEVELS):
        if not level:
            break
        found += level
        below: list[str] = []
        for workflow_id in level:
            try:
                child = await client.get_workflow_handle(workflow_id).describe()
            except RPCError:
                continue  # it finished meanwhile
            below += [grandchild.workflow_id for grandchild in child.raw_description.pending_children]
        level = below
    return found


async def waiting_subagents(
    client: Client, desc: WorkflowExecutionDescription, wait: timedelta = ANSWER_WAIT
) -> list[tuple[str, TaskStatus]]:
    """The task's running sub-agents that wait for a person (an approval or a reply), with their status."""
    waiting = []
    for workflow_id in await running_subagents(client, desc):
        try:
            status = await ask_status(client, workflow_id, desc.task_queue, wait=wait, say=None)
        except WorkflowQueryFailedError:
            continue
        if status is None:
            continue
        if status.pending_approval is not None or status.question is not None:
            waiting.append((workflow_id, status))
    return waiting


async def subagent_call(
    client: Client, workflow_id: str, call_id: str | None = None, wait: timedelta = ANSWER_WAIT
) -> tuple[str, PendingApproval] | None:
    """The call of one of the task's sub-agents that waits for approval (``call_id`` if given),
    with the sub-agent's workflow id; None when none does."""
    desc = await client.get_workflow_handle(workflow_id).describe()
    for child_id, status in await waiting_subagents(client, desc, wait):
        pending = status.pending_approval
        if pending is not None and call_id in (None, pending.call_id):
            return child_id, pending
    return None


async def approval_holder(client: Client, workflow_id: str, call_id: str, wait: timedelta = ANSWER_WAIT) -> str:
    """The workflow whose pending call ``call_id`` is: the task itself, or one of its
    sub-agents. When a worker answers, the sub-agents' status queries say; when none does,
    the sub-agent whose ``AgentState`` is ``WAITING_APPROVAL`` (the deepest, if ever several)."""
    desc = await client.get_workflow_handle(workflow_id).describe()
    children = await running_subagents(client, desc)
    if not children:
        return workflow_id
    if await worker_absence(client, workflow_id, desc.task_queue, wait) is None:
        for child_id, status in await waiting_subagents(client, desc, wait):
            if status.pending_approval is not None and status.pending_approval.call_id == call_id:
                return child_id
        return workflow_id
    for child_id in reversed(children):
        try:
            state = (await client.get_workflow_handle(child_id).describe()).typed_search_attributes.get(AGENT_STATE)
        except RPCError:
            continue
        if state == TaskState.WAITING_APPROVAL.value:
            return child_id
    return workflow_id
