"""History growth of a long task vs. what was actually said.

    python -m benchmarks.history_growth [--turns 150] [--file-bytes 4096]

A scripted task reads a different 4 KB file each turn, then finishes. Prints
the total history bytes across all runs of the task (as the server counts
them), the bytes of messages, tool calls and tool results, and their ratio
(target: at most 3).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from benchmarks.common import context_entries, run_scripted, run_stats, said_bytes, start_env, workspace_with_files
from contracts.task import TaskInput
from fakes.scripted import tool
from runtime.store import ContextStore


async def main(turns: int, file_bytes: int) -> None:
    env = await start_env()
    try:
        with tempfile.TemporaryDirectory() as ws:
            workspace_with_files(Path(ws), turns, file_bytes)
            store = ContextStore(Path(ws) / ".store" / "context.db")
            steps = [tool("file", action="read", path=f"f{i}.txt") for i in range(turns)]
            steps.append(tool("message", type="result", text="read them all"))
            task = TaskInput(instruction="read every file", workspace=ws, model="bench", stream=False,
                             max_iterations=turns + 5, search_attributes=True)
            workflow_id, outcome = await run_scripted(env.client, steps, task, store)
            stats = await run_stats(env.client, workflow_id)
            said = said_bytes(context_entries(store))
    finally:
        await env.shutdown()
    history = sum(s.history_bytes for s in stats)
    print(f"turns:                       {outcome.turns} ({outcome.status.value}, {len(stats)} run(s))")
    print(f"history bytes (all runs):    {history:,}")
    print(f"messages + tool results:     {said:,}")
    print(f"ratio history / said:        {history / said:.2f}  (target <= 3)")
    print(f"history events (all runs):   {sum(s.events for s in stats):,}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--file-bytes", type=int, default=4096)
    opts = parser.parse_args()
    asyncio.run(main(opts.turns, opts.file_bytes))
