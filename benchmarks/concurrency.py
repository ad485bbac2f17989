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
import json
import multiprocessing
import statistics
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from activities.llm import ProviderSettings
from benchmarks.common import answer_tool_call, start_env
from contracts.task import TaskInput
from runtime.settings import load_settings
from runtime.store import ContextStore
from worker import build_worker
from workflows.task import AgentTaskWorkflow


def serve_model(turns: int, latency_s: float, port: Any) -> None:  # a multiprocessing.Value('i')
    """The model, in a process of its own so it does not share the worker's interpreter."""
    server = model_server(turns, latency_s)
    port.value = server.server_address[1]
    threading.Event().wait()


def model_server(turns: int, latency_s: float) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            done = sum(1 for m in body["messages"] if m["role"] == "tool")
            time.sleep(latency_s)
            if done < turns - 1:
                call = {"name": "file", "arguments": json.dumps({"action": "list", "path": "."})}
            else:
                call = {"name": "message", "arguments": json.dumps({"type": "result", "text": "done"})}
            answer_tool_call(self, call, done)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def main(tasks: int, turns: int, latency_s: float) -> None:
    env = await start_env()
    port = multiprocessing.Value("i", 0)
    model = multiprocessing.Process(target=serve_model, args=(turns, latency_s, port), daemon=True)
    model.start()
    while not port.value:
        await asyncio.sleep(0.05)
    latencies: list[float] = []
    try:
        with tempfile.TemporaryDirectory() as ws:
            store = ContextStore(Path(ws) / ".store" / "context.db")
            settings = ProviderSettings(openai_base_url=f"http://127.0.0.1:{port.value}/v1")
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
