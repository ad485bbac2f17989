"""Shared pieces of the benchmarks: an in-memory dev server, a scripted run, per-run history
stats, and a model of their own in a process of its own."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from contracts.task import TaskInput, TaskOutcome
from core.entries import AiMessage, Entry, ToolCall, ToolResult, UserMessage
from core.settings import ProviderSettings
from fakes.scripted import ScriptedModelServer
from fakes.step import Step
from runtime.logs import configure_logging
from runtime.secrets import SecretStore
from runtime.settings import load_settings
from runtime.store import ContextStore
from temporal.server import start_local_env
from worker import build_worker
from workflows.task import AgentTaskWorkflow


def quiet_logging() -> None:
    """Warnings and errors only, redacted as a worker started here would redact them."""
    configure_logging("WARNING", secrets=SecretStore.from_settings(load_settings().secrets))


async def start_env() -> WorkflowEnvironment:
    quiet_logging()
    return await start_local_env()


@dataclass
class RunStats:
    run_id: str
    history_bytes: int
    events: int
    seconds: float  # from the run's start to its close (0 while it runs)


async def run_scripted(
    client: Client, steps: list[Step], task: TaskInput, store: ContextStore, *more_stores: ContextStore
) -> tuple[str, TaskOutcome]:
    """Run one scripted task on a worker per store (several: as if on several hosts, each
    with its own disk, all polling the task's queue)."""
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    with ScriptedModelServer(steps, record=False) as model:  # thousands of turns: no bodies kept
        settings = ProviderSettings(openai_base_url=model.url)
        async with contextlib.AsyncExitStack() as workers:
            for index, each in enumerate((store, *more_stores)):
                # One client per worker, as on separate hosts (the SDK allows one worker per
                # client and task queue).
                own = client if index == 0 else await Client.connect(
                    client.service_client.config.target_host, namespace=client.namespace,
                    data_converter=client.data_converter,
                )
                await workers.enter_async_context(build_worker(own, queue=queue, settings=settings, store=each,
                                                                      config=load_settings()))
            workflow_id = f"bench-task-{uuid.uuid4().hex[:8]}"
            outcome = await client.execute_workflow(AgentTaskWorkflow.run, task, id=workflow_id, task_queue=queue)
        model.assert_consumed()
    return workflow_id, outcome


async def run_stats(client: Client, workflow_id: str) -> list[RunStats]:
    """Each run of the task, first to last."""
    stats = []
    executions = [e async for e in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
    for execution in sorted(executions, key=lambda e: e.start_time):
        desc = await client.get_workflow_handle(workflow_id, run_id=execution.run_id).describe()
        info = desc.raw_description.workflow_execution_info
        seconds = (execution.close_time - execution.start_time).total_seconds() if execution.close_time else 0.0
        stats.append(RunStats(execution.run_id, info.history_size_bytes, info.history_length, seconds))
    return stats


def said_bytes(entries: list[Entry]) -> int:
    """Bytes of what was actually said: messages, tool calls and tool results."""
    total = 0
    for e in entries:
        if isinstance(e, (UserMessage, AiMessage)):
            total += len(e.text.encode())
        elif isinstance(e, ToolCall):
            total += len(e.text.encode()) + sum(len(c.model_dump_json(include={"name", "arguments"}).encode()) for c in e.calls)
        elif isinstance(e, ToolResult):
            total += len(e.content.encode())
    return total


def context_entries(store: ContextStore) -> list[Entry]:
    """Every stored entry of the (single) task in the store, large outputs expanded."""
    from pydantic import TypeAdapter

    adapter = TypeAdapter(Entry)
    rows = store._conn().execute("SELECT body FROM entries ORDER BY seq").fetchall()
    entries = [adapter.validate_json(body) for (body,) in rows]
    return [
        e.model_copy(update={"content": store.get_blob(e.blob) or e.content})
        if isinstance(e, ToolResult) and e.blob else e
        for e in entries
    ]


def workspace_with_files(root: Path, count: int, size: int) -> None:
    for i in range(count):
        line = f"file {i}: the quick brown fox jumps over the lazy dog {i * 7919 % 10007}\n"
        (root / f"f{i}.txt").write_text((line * (size // len(line) + 1))[:size])


Answer = Callable[[dict[str, Any]], dict[str, Any]]  # a request body -> the tool call to answer


async def start_model(answer: Answer, latency_s: float = 0.0) -> tuple[BaseProcess, str]:
    """A local OpenAI-compatible model in a process of its own (forked, so ``answer`` may hold
    state; the worker's interpreter is not slowed by it): each chat completion is answered,
    after ``latency_s``, with the one tool call ``answer`` picks. Returns the process (for
    ``terminate()``) and the base URL."""
    port = multiprocessing.Value("i", 0)
    process = multiprocessing.get_context("fork").Process(target=_serve_model, args=(answer, latency_s, port),
                                                          daemon=True)
    process.start()
    while not port.value:
        await asyncio.sleep(0.05)
    return process, f"http://127.0.0.1:{port.value}/v1"


def _serve_model(answer: Answer, latency_s: float, port: Any) -> None:  # port: a multiprocessing.Value('i')
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not self.path.endswith("/chat/completions"):  # e.g. a worker asking an unknown model's window
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            time.sleep(latency_s)
            answer_tool_call(self, answer(body), len(body["messages"]))

    class Server(ThreadingHTTPServer):
        request_queue_size = 256  # hundreds of tasks may connect at once (the default backlog is 5)
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    port.value = server.server_address[1]
    server.serve_forever()


def tool_results(body: dict[str, Any]) -> int:
    """The tool results in a request's conversation: the turns a task has taken so far."""
    return sum(1 for m in body["messages"] if m["role"] == "tool")


@dataclass(frozen=True)
class ListThenFinish:
    """An ``Answer``: ``file list`` until the conversation holds ``turns - 1`` tool results,
    then ``message result``: a task of ``turns`` turns."""

    turns: int

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if tool_results(body) < self.turns - 1:
            return {"name": "file", "arguments": json.dumps({"action": "list", "path": "."})}
        return FINISH


FINISH = {"name": "message", "arguments": json.dumps({"type": "result", "text": "done"})}


def answer_tool_call(handler: BaseHTTPRequestHandler, call: dict[str, Any], index: int) -> None:
    """Answer a chat-completions request with one tool call (``{"name", "arguments"}``)."""
    reply = json.dumps({
        "id": "x", "object": "chat.completion", "model": "bench",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "",
            "tool_calls": [{"id": f"call_{index}", "type": "function", "function": call}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(reply)))
    handler.end_headers()
    handler.wfile.write(reply)


def run_reading_benchmark(main: Callable[[int, int], Coroutine[Any, Any, None]]) -> None:
    """The command line of a benchmark whose task reads a different file each turn:
    ``main(turns, file_bytes)`` from ``--turns`` (150) and ``--file-bytes`` (4,096)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--file-bytes", type=int, default=4096)
    opts = parser.parse_args()
    asyncio.run(main(opts.turns, opts.file_bytes))
