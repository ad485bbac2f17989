"""A task of thousands of turns: continue-as-new keeps every run small, and the worker too.

    python -m benchmarks.long_task [--turns 3000]

Prints the number of runs, the largest run's history bytes and event count
(targets: under 10 MB and 10,000 events per run), the total history against the bytes of
messages, calls and results, the wall time, and this process's peak resident memory (the
worker runs in it; the dev server does not). Then each run's turns and ms per turn, so a
per-turn cost that grows with the task shows as a rising column.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time
from pathlib import Path

from temporalio.client import Client

from benchmarks.common import context_entries, run_scripted, run_stats, said_bytes, start_env, workspace_with_files
from contracts.task import TaskInput
from fakes.scripted import tool
from runtime.store import ContextStore

FILES = 10  # cycled through, so no call repeats often enough to look like a loop


async def main(turns: int) -> None:
    env = await start_env()
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as ws:
            workspace_with_files(Path(ws), FILES, 512)
            store = ContextStore(Path(ws) / ".store" / "context.db")
            steps = [tool("file", action="read", path=f"f{i % FILES}.txt") for i in range(turns - 1)]
            steps.append(tool("message", type="result", text=f"done after {turns} turns"))
            task = TaskInput(instruction="read the files over and over", workspace=ws, model="bench",
                             stream=False, max_iterations=turns + 5, search_attributes=True)
            workflow_id, outcome = await run_scripted(env.client, steps, task, store)
            elapsed = time.perf_counter() - started
            stats = await run_stats(env.client, workflow_id)
            first_turns = [await turns_before(env.client, workflow_id, s.run_id) for s in stats]
            said = said_bytes(context_entries(store))
    finally:
        await env.shutdown()
    largest = max(stats, key=lambda s: s.history_bytes)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux
    print(f"turns:                     {outcome.turns} ({outcome.status.value}: {outcome.final_text})")
    print(f"runs:                      {len(stats)} (outcome says {outcome.runs})")
    print(f"largest run history:       {largest.history_bytes:,} bytes (target < 10,000,000)")
    print(f"most events in a run:      {max(s.events for s in stats):,} (target < 10,000)")
    total = sum(s.history_bytes for s in stats)
    print(f"total history, all runs:   {total:,} bytes ({total / said:.2f} x the {said:,} bytes said)")
    print(f"wall time:                 {elapsed:.0f} s ({elapsed / turns * 1000:.0f} ms/turn)")
    print(f"peak resident memory:      {peak_mb:.0f} MB (this process, the worker in it)")
    print(f"{'run':>4} {'from turn':>9} {'turns':>6} {'ms/turn':>8} {'events':>7} {'history bytes':>14}")
    for index, (run, first) in enumerate(zip(stats, first_turns, strict=True)):
        upto = first_turns[index + 1] if index + 1 < len(stats) else outcome.turns
        count = max(1, upto - first)
        print(f"{index + 1:>4} {first:>9} {upto - first:>6} {run.seconds / count * 1000:>8.1f} {run.events:>7,}"
              f" {run.history_bytes:>14,}")


async def turns_before(client: Client, workflow_id: str, run_id: str) -> int:
    """The task's turns when this run started: its input's carry (0 in the first run)."""
    async for event in client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history_events(page_size=1):
        payloads = event.workflow_execution_started_event_attributes.input.payloads
        (task,) = await client.data_converter.decode(payloads, [TaskInput])
        return task.carry.turn if task.carry else 0
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=3000)
    asyncio.run(main(parser.parse_args().turns))
