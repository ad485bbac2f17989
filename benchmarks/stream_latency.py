"""How long streamed model text takes to reach a watcher on another host.

    python -m benchmarks.stream_latency [--pieces 80] [--every-ms 50]

The scripted model streams a reply in ``--pieces`` chunks, ``--every-ms`` apart. A worker
runs the task; ``starter.py watch ID --json`` runs as its own process with a data directory
of its own (nothing shared with the worker but the Temporal server, on which activity
dispatch goes through matching). The model starts once ``watch`` is following. For every
chunk the delay is the time from the model server sending it to ``watch`` printing it; p50
and p95 are printed (aim: p95 under 250 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from temporalio.client import Client

from benchmarks.common import quiet_logging
from contracts.task import TaskInput
from core.settings import ProviderSettings
from fakes.scripted import ScriptedModelServer
from fakes.step import Step
from runtime.settings import load_settings
from runtime.store import ContextStore
from temporal.server import NO_EAGER_ACTIVITIES, start_local_env
from worker import build_worker
from workflows.task import AgentTaskWorkflow

ROOT = Path(__file__).resolve().parent.parent


async def watch_deltas(client: Client, pieces: int, every_s: float, root: Path) -> tuple[list[float], list[float]]:
    """(send times of the chunks, times at which watch had printed the text through each)."""
    text = "".join(f"word{i:03d} " for i in range(pieces))
    step = Step(text=text, text_pieces=pieces, frame_delay_s=every_s, hold=True,
                tool_calls=[("message", {"type": "result", "text": "done"})])
    queue, workflow_id = f"stream-{uuid.uuid4().hex[:8]}", f"stream-task-{uuid.uuid4().hex[:8]}"
    (root / "ws").mkdir(parents=True, exist_ok=True)
    with ScriptedModelServer([step]) as model:
        settings = ProviderSettings(openai_base_url=model.url)
        async with build_worker(client, queue=queue, settings=settings, store=ContextStore(root / "worker" / "c.db"),
                                config=load_settings()):
            task = TaskInput(instruction="talk", workspace=str(root / "ws"), model="m", stream=True)
            await client.start_workflow(AgentTaskWorkflow.run, task, id=workflow_id, task_queue=queue)
            env = {**os.environ, "AGENT_DATA_DIR": str(root / "watcher"), "TEMPORAL_NAMESPACE": client.namespace,
                   "TEMPORAL_ADDRESS": client.service_client.config.target_host}
            proc = await asyncio.create_subprocess_exec(
                sys.executable, str(ROOT / "starter.py"), "watch", workflow_id, "--json", cwd=ROOT, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            )
            assert proc.stdout is not None
            shown, arrivals = "", []
            await proc.stdout.readline()  # watch is up (its first event): now the model speaks
            model.release()
            async for line in proc.stdout:
                event = json.loads(line)
                if event.get("type") == "text.delta":
                    shown += event["text"]
                    arrivals.append((time.monotonic(), len(shown)))
            await proc.wait()
        sent = model.text_sent
    printed_at, covered = [], 0
    ends = []
    for _, piece in sent:
        covered += len(piece)
        ends.append(covered)
    for end in ends:
        printed_at.append(next((t for t, length in arrivals if length >= end), float("inf")))
    return [t for t, _ in sent], printed_at


async def main(pieces: int, every_ms: int) -> None:
    quiet_logging()
    env = await start_local_env(extra_args=NO_EAGER_ACTIVITIES)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sent, printed = await watch_deltas(env.client, pieces, every_ms / 1000, Path(tmp))
    finally:
        await env.shutdown()
    delays = sorted((p - s) * 1000 for s, p in zip(sent, printed))
    missing = sum(1 for d in delays if d == float("inf"))
    shown = [d for d in delays if d != float("inf")]
    p50 = statistics.median(shown)
    p95 = shown[min(len(shown) - 1, int(0.95 * len(shown)))]
    print(f"chunks: {len(delays)} sent {every_ms} ms apart; watch in its own process and data directory")
    print(f"delay from send to print: p50 {p50:.0f} ms, p95 {p95:.0f} ms, max {shown[-1]:.0f} ms (aim: p95 < 250 ms)")
    if missing:
        print(f"chunks never printed live: {missing}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--pieces", type=int, default=80)
    parser.add_argument("--every-ms", type=int, default=50)
    opts = parser.parse_args()
    asyncio.run(main(opts.pieces, opts.every_ms))
