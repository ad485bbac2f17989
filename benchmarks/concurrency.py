"""Many tasks at once on one worker, with a slow model.

    python -m benchmarks.concurrency [--tasks 200] [--turns 3] [--latency 1.0]

A local OpenAI-compatible model answers every call after ``--latency`` seconds:
``file list`` until the conversation holds ``turns - 1`` tool results, then
``message result``. All tasks start together on one worker (this machine: 2
cores). Prints the wall time for all of them, the per-task latency
percentiles, and the ideal (turns x latency), so the engine's share is visible.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks.common import ListThenFinish, start_env, start_model
from contracts.task import TaskInput
from core.settings import ProviderSettings
from runtime.settings import load_settings
from runtime.store import ContextStore
from worker import build_worker
from workflows.task import AgentTaskWorkflow


async def main(tasks: int, turns: int, latency_s: float) -> None:
    env = await start_env()
    model, url = await start_model(ListThenFinish(turns), latency_s)
    latencies: list[float] = []
    try:
        with tempfile.TemporaryDirectory() as ws:
            store = ContextStore(Path(ws) / ".store" / "context.db")
            settings = ProviderSettings(openai_base_url=url)
            queue = f"bench-{uuid.uuid4().hex[:8]}"
            async with build_worker(env.client, queue=queue, settings=settings, store=store, config=load_settings(),
                                    max_concurrent_activities=max(200, tasks * 2)):

                async def one(i: int) -> None:
                    started = time.perf_counter()
                    outcome = await env.client.execute_workflow(
                        AgentTaskWorkflow.run,
                        TaskInput(instruction=f"task {i}", workspace=ws, model="bench", stream=False),
                        id=f"conc-{i}-{uuid.uuid4().hex[:6]}", task_queue=queue,
                    )
                    assert outcome.turns == turns, outcome
                    latencies.append(time.perf_counter() - started)

                wall_start = time.perf_counter()
                await asyncio.gather(*(one(i) for i in range(tasks)))
                wall = time.perf_counter() - wall_start
    finally:
        model.terminate()
        await env.shutdown()
    latencies.sort()
    ideal = turns * latency_s
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    print(f"tasks:                 {tasks} concurrent, {turns} turns each, model latency {latency_s:.1f} s")
    print(f"ideal task time:       {ideal:.1f} s (turns x latency)")
    print(f"wall time, all tasks:  {wall:.1f} s ({tasks * turns / wall:.1f} turns/s)")
    print(f"task latency:          p50 {p(0.5):.1f} s, p95 {p(0.95):.1f} s, max {latencies[-1]:.1f} s")
    print(f"mean overhead/turn:    {(statistics.mean(latencies) - ideal) / turns * 1000:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--latency", type=float, default=1.0)
    opts = parser.parse_args()
    asyncio.run(main(opts.tasks, opts.turns, opts.latency))
