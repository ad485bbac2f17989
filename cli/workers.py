"""Whether a worker answers for a task, and the task's status when one does.

A worker keeps the tasks it ran cached, and Temporal sends their queries and workflow tasks
to that worker's own (sticky) queue first. A worker killed leaves them pinned there, and
Temporal holds their queries for the sticky timeout (worker.py sets 5 s) before it tries the
shared queue: as long as a command waits. So when no answer comes but a worker polls the
shared queue, the task is unpinned (ResetStickyTaskQueue, what a worker does itself when it
drops a task from its cache) and asked again, so a worker that just restarted answers.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest, ResetStickyTaskQueueRequest
from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError

from cli.hints import invoked
from contracts.task import DEFAULT_TASK_QUEUE, TaskStatus
from core.settings import TemporalSettings
from workflows.task import AgentTaskWorkflow

RPC_TIMEOUT = timedelta(seconds=5)
# A live worker renews its long poll of the task queue at least about once a minute; Temporal
# keeps listing a poller for minutes after its last poll.
POLLED_WITHIN_S = 75.0
ANSWER_WAIT = timedelta(seconds=3)  # a worker answers a status query in milliseconds; this is "none answers"
RESTART_WAIT = timedelta(seconds=15)  # a worker just started may still be importing and connecting
RESTARTED = "waiting for a worker to answer (one may have just restarted)…"


def to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def queue_polled(client: Client, queue: str) -> bool:
    """Whether a worker polled ``queue`` for workflow tasks lately (Temporal's list of the
    queue's pollers, with the time of each one's last poll). True when it cannot be told."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    try:
        pollers = (await client.workflow_service.describe_task_queue(request, timeout=RPC_TIMEOUT)).pollers
    except RPCError:
        return True
    now = time.time()
    return any(now - poller.last_access_time.ToMicroseconds() / 1e6 < POLLED_WITHIN_S for poller in pollers)


async def unpolled_notice(client: Client, queue: str, settings: TemporalSettings) -> str | None:
    """One line saying what to run when no worker polls ``queue`` lately; None when one does
    (or it cannot be told)."""
    if await queue_polled(client, queue):
        return None
    env = f"AGENT_TASK_QUEUE={queue} " if queue != (settings.task_queue or DEFAULT_TASK_QUEUE) else ""
    command = env + invoked("worker", settings)
    # A queue per model settings (cli/worker_records.py): its worker needs the settings its tasks started with.
    settings_note = " with the model settings its tasks were started with" if "@" in queue else ""
    return f"no worker polls task queue {queue}: the task waits until one does; start one{settings_note} with: {command}"


async def unpin(client: Client, workflow_id: str) -> None:
    """Let any worker of the task queue take the task's next query and workflow task, not
    only the one that ran it last (which may be dead)."""
    request = ResetStickyTaskQueueRequest(namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id))
    try:
        await client.workflow_service.reset_sticky_task_queue(request, timeout=RPC_TIMEOUT)
    except RPCError:
        pass  # closed meanwhile, or refused: the query after it says what there is to say


async def ask(
    client: Client, workflow_id: str, queue: str, query: Callable[..., Any], *args: Any,
    wait: timedelta = ANSWER_WAIT, patience: timedelta | None = None,
    say: Callable[[str], None] | None = to_stderr,
) -> Any:
    """The task's answer to ``query``, or None when no worker answers. When none answers
    within ``wait`` but one polls ``queue``, the task is unpinned and asked once more, for up
    to ``patience`` (default ``wait``), after ``say`` tells the person so. A worker that
    answers with an error raises WorkflowQueryFailedError."""
    handle = client.get_workflow_handle(workflow_id)
    try:
        return await handle.query(query, *args, rpc_timeout=wait)
    except RPCError:
        pass
    if not await queue_polled(client, queue):
        return None
    if say is not None:
        say(RESTARTED)
    await unpin(client, workflow_id)
    try:
        return await handle.query(query, *args, rpc_timeout=patience or wait)
    except RPCError:
        return None


async def ask_status(
    client: Client, workflow_id: str, queue: str, *, wait: timedelta = ANSWER_WAIT,
    patience: timedelta | None = None, say: Callable[[str], None] | None = to_stderr,
) -> TaskStatus | None:
    """The task's status query (``ask``)."""
    return await ask(client, workflow_id, queue, AgentTaskWorkflow.status, wait=wait, patience=patience, say=say)


async def worker_absence(client: Client, workflow_id: str, queue: str, wait: timedelta = ANSWER_WAIT) -> str | None:
    """Why no worker serves the task now, in words; None when one does. A worker has polled
    its task queue lately (cheap, and says at once when none has) and one answers the task's
    status query (so one that died a moment ago does not count, and one that replaced it does)."""
    if not await queue_polled(client, queue):
        return f"no worker is polling task queue {queue}"
    try:
        if await ask_status(client, workflow_id, queue, wait=wait) is not None:
            return None
    except WorkflowQueryFailedError:
        return None  # a worker answered, with an error
    return f"no worker answered for task {workflow_id} within {2 * wait.total_seconds():g} s (task queue {queue})"
