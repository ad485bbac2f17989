"""A store locked by another process for longer than the heartbeat timeout delays only the
calls that need it: the worker's event loop keeps beating, no activity is taken for dead,
and the tool that was running runs exactly once."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

from temporalio.api.enums.v1 import EventType

from contracts.activities import TOOL_ACTIVITY
from contracts.task import TaskState
from fakes.scripted import tool
from tests import configured
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start, wait_for_state, wait_until
from workflows.policy import HEARTBEAT_TIMEOUT


def hold_exclusive_lock(path, seconds: float, held: threading.Event) -> None:
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    held.set()
    threading.Event().wait(seconds)
    conn.execute("COMMIT")
    conn.close()


async def test_a_locked_store_delays_a_tool_without_running_it_twice(client, task_queue, workspace):
    steps = [tool("shell", command="echo run >> runs.txt; sleep 2"), tool("message", type="result", text="ok")]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace))
        await wait_for_state(handle, TaskState.EXECUTING_TOOL)
        await wait_until(lambda: (workspace / "runs.txt").exists())
        held = threading.Event()
        locker = threading.Thread(
            target=hold_exclusive_lock,
            args=(configured.store_path(), HEARTBEAT_TIMEOUT.total_seconds() + 5, held), daemon=True,
        )
        locker.start()  # the tool finishes while the store is locked, and must wait to record it
        await asyncio.to_thread(held.wait, 10)
        outcome = await asyncio.wait_for(outcome_of(handle), 90)
        await asyncio.to_thread(locker.join, 30)
    assert outcome.status == TaskState.DONE and outcome.final_text == "ok"
    assert (workspace / "runs.txt").read_text() == "run\n"
    events = (await handle.fetch_history()).events
    scheduled = {e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name for e in events
                 if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED}
    tool_attempts = [e.activity_task_started_event_attributes.attempt for e in events
                     if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
                     and scheduled[e.activity_task_started_event_attributes.scheduled_event_id] == TOOL_ACTIVITY]
    assert tool_attempts == [1]  # the shell: never timed out, never retried (the message runs local)
