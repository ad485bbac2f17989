"""A task of thousands of turns: continue-as-new keeps every run small.

    python -m benchmarks.long_task [--turns 3000]

Prints the number of runs, the largest run's history bytes and event count
(targets: under 10 MB and 10,000 events per run), the total history against the bytes of
messages, calls and results, and the wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

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
            stats = await run_stats(env.client, workflow_id)
            said = said_bytes(context_entries(store))
    finally:
        await env.shutdown()
    elapsed = time.perf_counter() - started
    largest = max(stats, key=lambda s: s.history_bytes)
    print(f"turns:                     {outcome.turns} ({outcome.status.value}: {outcome.final_text})")
    print(f"runs:                      {len(stats)} (outcome says {outcome.runs})")
    print(f"largest run history:       {largest.history_bytes:,} bytes (target < 10,000,000)")
    print(f"most events in a run:      {max(s.events for s in stats):,} (target < 10,000)")
    total = sum(s.history_bytes for s in stats)
    print(f"total history, all runs:   {total:,} bytes ({total / said:.2f} x the {said:,} bytes said)")
    print(f"wall time:                 {elapsed:.0f} s ({elapsed / turns * 1000:.0f} ms/turn)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=3000)
    asyncio.run(main(parser.parse_args().turns))
