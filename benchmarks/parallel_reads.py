"""Parallel reads: a model that asks for 5 files per reply against one per reply (issue 32).

    python -m benchmarks.parallel_reads [--files 20] [--per-reply 5] [--file-bytes 2048]

A scripted model reads ``--files`` files of ``--file-bytes`` each, then finishes: once
asking for ``--per-reply`` of them per reply (they run together, workflows/parallel.py),
once one per reply (seed 000's single step). Printed side by side: turns, model calls, the
input tokens the model was sent (estimated from the requests it received, at 4 characters a
token, tool schemas included) and the task's history bytes. Expect about 1/``--per-reply``
of the turns and model calls, and less still of the input tokens (each file's content is
resent with every later call, and there are fewer later calls).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client

from benchmarks.common import run_stats, start_env, workspace_with_files
from contracts.task import TaskInput, TaskState
from core.settings import ProviderSettings
from core.turns import CHARS_PER_TOKEN
from fakes.scripted import ScriptedModelServer, tool
from fakes.step import Step
from runtime.settings import load_settings
from worker import build_worker
from workflows.task import AgentTaskWorkflow


@dataclass
class Figures:
    turns: int
    model_calls: int
    input_tokens: int
    history_bytes: int


def script(files: int, per_reply: int) -> list[Step]:
    names = [f"f{i}.txt" for i in range(files)]
    replies = [names[i:i + per_reply] for i in range(0, files, per_reply)]
    steps = [Step(tool_calls=[("file", {"action": "read", "path": n}) for n in reply]) for reply in replies]
    return [*steps, tool("message", type="result", text="read them all")]


async def run(client: Client, workspace: Path, files: int, per_reply: int) -> Figures:
    queue, workflow_id = f"bench-{uuid.uuid4().hex[:8]}", f"bench-task-{uuid.uuid4().hex[:8]}"
    task = TaskInput(instruction=f"read the {files} files", workspace=str(workspace), model="bench", stream=False,
                     max_iterations=files + 5)
    with ScriptedModelServer(script(files, per_reply)) as model:
        async with build_worker(client, queue=queue, settings=ProviderSettings(openai_base_url=model.url),
                                config=load_settings()):
            outcome = await client.execute_workflow(AgentTaskWorkflow.run, task, id=workflow_id, task_queue=queue)
        model.assert_consumed()
        sent = sum(len(json.dumps({"messages": r["messages"], "tools": r.get("tools")})) for r in model.requests)
        calls = len(model.requests)
    assert outcome.status == TaskState.DONE, outcome.error
    history = sum(s.history_bytes for s in await run_stats(client, workflow_id))
    return Figures(outcome.turns, calls, sent // CHARS_PER_TOKEN, history)


async def main(files: int, per_reply: int, file_bytes: int) -> None:
    env = await start_env()
    try:
        with tempfile.TemporaryDirectory() as root:
            workspace_with_files(Path(root), files, file_bytes)
            together = await run(env.client, Path(root), files, per_reply)
            single = await run(env.client, Path(root), files, 1)
    finally:
        await env.shutdown()
    print(f"{files} files of {file_bytes} bytes: {per_reply} reads per reply vs one per reply")
    print(f"{'':16}{f'{per_reply} per reply':>14}{'1 per reply':>14}{'ratio':>8}")
    for label, field in (("turns", "turns"), ("model calls", "model_calls"), ("input tokens", "input_tokens"),
                         ("history bytes", "history_bytes")):
        a, b = getattr(together, field), getattr(single, field)
        print(f"{label:16}{a:>14,}{b:>14,}{a / b:>8.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Parallel reads: 5 files per reply against one per reply.")
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--per-reply", type=int, default=5)
    parser.add_argument("--file-bytes", type=int, default=2048)
    args = parser.parse_args()
    asyncio.run(main(args.files, args.per_reply, args.file_bytes))
