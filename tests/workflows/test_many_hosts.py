"""Many hosts, one task: workers with separate disks share a task without resends, on a
server that dispatches activities through matching (eager dispatch off, as in production)."""

from __future__ import annotations

import pytest
import pytest_asyncio

from benchmarks.common import context_entries, run_scripted, run_stats, said_bytes, workspace_with_files
from contracts.task import TaskInput, TaskState
from fakes.scripted import tool
from runtime.store import ContextStore
from temporal.server import NO_EAGER_ACTIVITIES, start_local_env

TURNS = 60
FILE_BYTES = 4096


@pytest_asyncio.fixture(scope="module")
async def spread_env():
    env = await start_local_env(extra_args=NO_EAGER_ACTIVITIES)
    try:
        yield env
    finally:
        await env.shutdown()


def reading_task(workspace) -> tuple[list, TaskInput]:
    steps = [tool("file", action="read", path=f"f{i}.txt") for i in range(TURNS)]
    steps.append(tool("message", type="result", text="read them all"))
    task = TaskInput(instruction="read every file", workspace=str(workspace), model="m", stream=False,
                     max_iterations=TURNS + 5)
    return steps, task


@pytest.mark.parametrize("local_reads", ["1", "0"])
async def test_two_workers_on_separate_disks_keep_the_history_linear(spread_env, workspace, tmp_path, monkeypatch,
                                                                     local_reads):
    monkeypatch.setenv("AGENT_LOCAL_TOOLS", local_reads)
    workspace_with_files(workspace, TURNS, FILE_BYTES)
    steps, task = reading_task(workspace)
    one = ContextStore(tmp_path / "one" / "context.db")
    single_id, single = await run_scripted(spread_env.client, steps, task, one)
    host_a, host_b = ContextStore(tmp_path / "a" / "context.db"), ContextStore(tmp_path / "b" / "context.db")
    spread_id, spread = await run_scripted(spread_env.client, steps, task, host_a, host_b)

    assert single.status == spread.status == TaskState.DONE and spread.turns == TURNS + 1
    # Cache affinity: after the first model call every call went to the worker that served it.
    # With local reads, a read runs with the workflow, whose worker may be the other one: its
    # result reaches the model's worker through the workflow (a query), never as a resend
    # (the history bound below).
    if local_reads == "0":
        assert sorted([host_a.count_all() > 0, host_b.count_all() > 0]) == [False, True]
    queues = await scheduled_queues(spread_env.client, spread_id)
    assert "@" not in queues[0]  # the first model call: the shared queue (the prompt is a local activity)
    assert len(set(queues[1:])) == 1 and queues[-1].count("@") == 2  # then one worker's own
    single_bytes = sum(s.history_bytes for s in await run_stats(spread_env.client, single_id))
    spread_bytes = sum(s.history_bytes for s in await run_stats(spread_env.client, spread_id))
    said = said_bytes(context_entries(one))
    assert said >= TURNS * FILE_BYTES
    print(f"history: one worker {single_bytes:,} B, two hosts {spread_bytes:,} B, said {said:,} B")
    assert spread_bytes <= 1.15 * single_bytes
    assert spread_bytes <= 3 * said


async def scheduled_queues(client, workflow_id: str) -> list[str]:
    """The task queue of every activity the task scheduled, in order."""
    queues = []
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            queues.append(event.activity_task_scheduled_event_attributes.task_queue.name)
    return queues
