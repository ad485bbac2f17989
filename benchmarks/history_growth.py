"""History growth of a long task vs. what was actually said, on one host and on several.

    python -m benchmarks.history_growth [--turns 150] [--file-bytes 4096]

A scripted task reads a different 4 KB file each turn, then finishes. For each setting it
prints the total history bytes across all runs of the task (as the server counts them) and
their ratio to the bytes of messages, tool calls and tool results (target: at most 3):

    one worker              one host, one context store
    two hosts               two workers with separate stores share the task's activities
    cold cache              the task's host is replaced halfway: a new worker, an empty store
                            (the model's answer in flight at the switch is lost, so one
                            file fewer is read)

The server dispatches activities through matching (eager dispatch off), as production
clusters do, so activities really spread over the workers.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

from temporalio.client import Client

from benchmarks.common import (
    context_entries,
    quiet_logging,
    run_reading_benchmark,
    run_scripted,
    run_stats,
    said_bytes,
    workspace_with_files,
)
from contracts.task import TaskInput, TaskOutcome
from core.settings import ProviderSettings
from fakes.scripted import ScriptedModelServer, tool
from fakes.step import Step
from runtime.settings import load_settings
from runtime.store import ContextStore
from temporal.server import NO_EAGER_ACTIVITIES, start_local_env
from worker import build_worker
from workflows.task import AgentTaskWorkflow


def script(turns: int) -> list[Step]:
    steps = [tool("file", action="read", path=f"f{i}.txt") for i in range(turns)]
    return [*steps, tool("message", type="result", text="read them all")]


async def cold_cache(client: Client, turns: int, task: TaskInput, root: Path) -> tuple[str, TaskOutcome]:
    """Half the task on one worker; then that host is gone and a new one with an empty store goes on."""
    steps = script(turns)
    half = turns // 2
    steps[half] = Step(tool_calls=steps[half].tool_calls, hold=True)
    queue, workflow_id = f"bench-{uuid.uuid4().hex[:8]}", f"bench-task-{uuid.uuid4().hex[:8]}"
    with ScriptedModelServer(steps) as model:
        settings = ProviderSettings(openai_base_url=model.url)
        async with build_worker(client, queue=queue, settings=settings, store=ContextStore(root / "a" / "c.db"),
                                config=load_settings()):
            handle = await client.start_workflow(AgentTaskWorkflow.run, task, id=workflow_id, task_queue=queue)
            while model.hits() <= half:
                await asyncio.sleep(0.01)
        # A's in-flight call was cut off with its worker; the held answer is never used.
        model.release()
        async with build_worker(client, queue=queue, settings=settings, store=ContextStore(root / "b" / "c.db"),
                                config=load_settings()):
            outcome = await handle.result()
    return workflow_id, outcome


async def main(turns: int, file_bytes: int) -> None:
    quiet_logging()
    env = await start_local_env(extra_args=NO_EAGER_ACTIVITIES)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as ws:
            root = Path(ws)
            workspace = root / "ws"
            workspace.mkdir()
            workspace_with_files(workspace, turns, file_bytes)
            task = TaskInput(instruction="read every file", workspace=str(workspace), model="bench", stream=False,
                             max_iterations=turns + 5, search_attributes=True)
            one = ContextStore(root / "one" / "c.db")
            wid, outcome = await run_scripted(env.client, script(turns), task, one)
            said = said_bytes(context_entries(one))
            rows.append(("one worker", wid, outcome))
            two = ContextStore(root / "two-a" / "c.db"), ContextStore(root / "two-b" / "c.db")
            wid, outcome = await run_scripted(env.client, script(turns), task, *two)
            rows.append(("two hosts", wid, outcome))
            wid, outcome = await cold_cache(env.client, turns, task, root / "cold")
            rows.append(("cold cache", wid, outcome))
            stats = {name: await run_stats(env.client, wid) for name, wid, _ in rows}
    finally:
        await env.shutdown()
    print(f"turns: {turns}, {file_bytes:,} B read per turn; messages + tool results: {said:,} B")
    print(f"{'setting':<12} {'status':<7} {'history B':>11} {'/ said':>7} {'vs one':>7} {'events':>7}")
    base = sum(s.history_bytes for s in stats["one worker"])
    for name, _, outcome in rows:
        history = sum(s.history_bytes for s in stats[name])
        events = sum(s.events for s in stats[name])
        print(f"{name:<12} {outcome.status.value:<7} {history:>11,} {history / said:>7.2f} {history / base:>7.2f} {events:>7,}")


if __name__ == "__main__":
    run_reading_benchmark(main)
