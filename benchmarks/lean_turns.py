"""Lean turns: the project against Temporal's own floor, in the same run (issue 17, item 5).

    python -m benchmarks.lean_turns [--tasks 50] [--turns 10] [--long-turns 150]
                                    [--repeat 3] [--rounds 5] [--processes 2]
                                    [--file-bytes 2048] [--quick]

One embedded dev server (in memory, eager activity dispatch off as on production
clusters) and, in this one process, one worker at a time:
- floor: a workflow with no agent logic making 2 activity calls per turn, a trivial
  "model" activity and a "tool" activity that reads a file of ``--file-bytes`` (2 KB)
  and returns it (plain temporalio Worker: the SDK's stock sandboxed runner with the
  project's passthrough modules)
- project: the real AgentTaskWorkflow on ``worker.build_worker``, its model a local
  OpenAI-compatible server (in a process of its own, answering at once) whose tool
  calls read a different 2 KB file each turn, then finish with ``message result``

Prints, each for floor and project and their ratio:
- turns/s for ``--tasks`` tasks x ``--turns`` turns started at once: the median of
  ``--rounds`` rounds in which the floor, the project, the project with every tool call
  an ordinary activity (``AGENT_LOCAL_TOOLS=0``: the file reads are local activities
  otherwise, so this is the like-for-like figure against the floor's two activities a
  turn) and ``worker.py --processes N`` take turns (the machine's speed drifts and the
  server slows as it fills, so neighbours are compared; every round's figures are
  printed too)
- ms per turn of a single ``--turns`` task (median of ``--repeat`` runs after a
  warm-up) and of a single ``--long-turns`` task
- history bytes / content bytes of the ``--long-turns`` task (content: what was said,
  the model's calls and the tool results; the floor's: its calls and 2 KB results)
then a summary block of the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

with workflow.unsafe.imports_passed_through():
    from pydantic import TypeAdapter

    from benchmarks.common import FINISH, quiet_logging, run_stats, said_bytes, start_model, workspace_with_files
    from contracts.task import TaskInput
    from core.entries import Entry, ToolResult
    from core.settings import ProviderSettings
    from runtime.settings import load_settings
    from runtime.store import ContextStore
    from temporal.plugin import SANDBOX_RESTRICTIONS
    from temporal.server import NO_EAGER_ACTIVITIES, start_local_env
    from worker import build_worker
    from workflows.search_attributes import initial_search_attributes
    from workflows.task import AgentTaskWorkflow

TIMEOUT = timedelta(seconds=60)
MAX_ACTIVITIES = 200  # build_worker's default, for both
# The SDK's stock sandbox with the project's passthrough modules: what any Temporal app pays.
# (The project's worker runs a subclass of it that looks up payload serialization contexts
# without re-entering the sandbox; see temporal/sandbox.py.)
FLOOR_RUNNER = SandboxedWorkflowRunner(restrictions=SANDBOX_RESTRICTIONS)


# --- the floor ------------------------------------------------------------------------


@activity.defn(name="floor_model")
async def floor_model(turn: int) -> str:
    """A trivial model: the next tool call, as a small JSON text."""
    return json.dumps({"name": "file", "arguments": {"action": "read", "path": f"f{turn}.txt"}})


@activity.defn(name="floor_tool")
async def floor_tool(args: tuple[str, str, int]) -> str:
    """Read the file the call names: the 2 KB result."""
    workspace, call, files = args
    path = json.loads(call)["arguments"]["path"]
    index = int(path[1:-4]) % files
    return Path(workspace, f"f{index}.txt").read_text()


@workflow.defn
class LeanFloorWorkflow:
    """2 activity calls per turn and nothing else; returns the bytes of content said."""

    @workflow.run
    async def run(self, args: tuple[str, int, int]) -> int:
        workspace, turns, files = args
        said = 0
        for turn in range(turns):
            call = await workflow.execute_activity(floor_model, turn, start_to_close_timeout=TIMEOUT)
            result = await workflow.execute_activity(floor_tool, (workspace, call, files), start_to_close_timeout=TIMEOUT)
            said += len(call.encode()) + len(result.encode())
        return said


# --- the project's model ----------------------------------------------------------------

TASK_RE = re.compile(r"turns=(\d+) task=(\w+)")


class ReadsPerTask:
    """The project's model (an ``Answer`` for ``benchmarks.common.start_model``).

    The task's turn count and a tag are in its instruction ("... turns=N task=T"); it
    counts each task's calls (the prompt it is sent may be compacted, so the conversation
    cannot be counted) and answers ``file read`` of the next file N - 1 times, then
    ``message result``."""

    def __init__(self, files: int) -> None:
        self.files = files
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        asked = next(m for m in body["messages"] if m["role"] == "user")
        found = TASK_RE.search(json.dumps(asked.get("content")))
        turns, tag = (int(found.group(1)), found.group(2)) if found else (1, "")
        with self.lock:
            done = self.calls.get(tag, 0)
            self.calls[tag] = done + 1
        if done < turns - 1:
            return {"name": "file", "arguments": json.dumps({"action": "read", "path": f"f{done % self.files}.txt"})}
        return FINISH


# --- the measurements ---------------------------------------------------------------------


@dataclass
class Figures:
    turns_per_s: float = 0.0
    short_ms: float = 0.0  # ms per turn, single short task (median)
    long_ms: float = 0.0  # ms per turn, single long task
    history: int = 0  # history bytes of the long task
    content: int = 0  # content bytes of the long task

    @property
    def ratio(self) -> float:
        return self.history / self.content if self.content else float("nan")


# One task of n turns: returns (workflow id, content bytes or 0).
RunOne = Callable[[int], Awaitable[tuple[str, int]]]


async def measure(client: Client, run_one: RunOne, turns: int, long_turns: int, repeat: int) -> Figures:
    """The single-task figures: ms per turn of a short task (median of ``repeat``, after a
    warm-up) and of a long one, and the long task's history."""
    figures = Figures()
    await run_one(turns)  # warm-up, discarded
    short = []
    for _ in range(repeat):
        started = time.perf_counter()
        await run_one(turns)
        short.append(time.perf_counter() - started)
    figures.short_ms = statistics.median(short) / turns * 1000
    started = time.perf_counter()
    long_id, figures.content = await run_one(long_turns)
    figures.long_ms = (time.perf_counter() - started) / long_turns * 1000
    figures.history = sum(s.history_bytes for s in await run_stats(client, long_id))
    return figures


async def concurrent(run_one: RunOne, tasks: int, turns: int) -> float:
    """Turns/s of ``tasks`` tasks of ``turns`` turns started at once (after one warm-up task)."""
    await run_one(turns)
    started = time.perf_counter()
    await asyncio.gather(*(run_one(turns) for _ in range(tasks)))
    return tasks * turns / (time.perf_counter() - started)


@dataclass
class System:
    """One side of the comparison: its worker (started per phase) and one task of n turns."""

    worker: Callable[[], Any]  # an async context manager
    run_one: RunOne


def floor(client: Client, workspace: str, files: int) -> System:
    queue = f"lean-floor-{uuid.uuid4().hex[:8]}"

    async def run_one(turns: int) -> tuple[str, int]:
        workflow_id = f"lean-floor-{uuid.uuid4().hex[:8]}"
        said = await client.execute_workflow(
            LeanFloorWorkflow.run, (workspace, turns, files), id=workflow_id, task_queue=queue)
        return workflow_id, said

    return System(lambda: Worker(client, task_queue=queue, workflows=[LeanFloorWorkflow], workflow_runner=FLOOR_RUNNER,
                                 activities=[floor_model, floor_tool], max_concurrent_activities=MAX_ACTIVITIES), run_one)


def task_entries(store: ContextStore) -> list[Entry]:
    """The entries of the store's longest context (the long task), large outputs expanded."""
    adapter = TypeAdapter(Entry)
    conn = store._conn()
    (context_id,) = conn.execute(
        "SELECT context_id FROM entries GROUP BY context_id ORDER BY COUNT(*) DESC LIMIT 1").fetchone()
    rows = conn.execute("SELECT body FROM entries WHERE context_id = ? ORDER BY seq", (context_id,)).fetchall()
    entries = [adapter.validate_json(body) for (body,) in rows]
    return [
        e.model_copy(update={"content": store.get_blob(e.blob) or e.content})
        if isinstance(e, ToolResult) and e.blob else e
        for e in entries
    ]


def project(client: Client, workspace: str, store: ContextStore, model_url: str, local_tools: bool = True) -> System:
    queue = f"lean-project-{uuid.uuid4().hex[:8]}"

    async def run_one(turns: int) -> tuple[str, int]:
        workflow_id = f"lean-project-{uuid.uuid4().hex[:8]}"
        outcome = await client.execute_workflow(
            AgentTaskWorkflow.run,
            TaskInput(instruction=f"read the files, turns={turns} task={uuid.uuid4().hex}", workspace=workspace, model="bench", stream=False,
                      max_iterations=turns + 5, search_attributes=True),
            id=workflow_id, task_queue=queue, search_attributes=initial_search_attributes("bench"),  # as `run` starts one
        )
        assert outcome.turns == turns, outcome
        return workflow_id, 0

    settings = ProviderSettings(openai_base_url=model_url)
    return System(lambda: build_worker(client, queue=queue, settings=settings, store=store, config=load_settings(),
                                       max_concurrent_activities=MAX_ACTIVITIES, local_tools=local_tools), run_one)


async def processes_figure(client: Client, workspace: str, root: Path, model_url: str, tasks: int, turns: int,
                           processes: int) -> float:
    """Turns/s of ``tasks`` x ``turns`` at once served by ``worker.py --processes N``: N worker
    processes sharing one store, as deployed (the same server and model)."""
    queue = f"lean-procs-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, TEMPORAL_ADDRESS=client.service_client.config.target_host, TEMPORAL_NAMESPACE="default",
               AGENT_TASK_QUEUE=queue, OPENAI_BASE_URL=model_url, OPENAI_API_KEY="bench",
               AGENT_DATA_DIR=str(root / "procs"), AGENT_CONTEXT_DB=str(root / "procs" / "context.db"))
    project_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # not at import: the sandbox re-imports this
    supervisor = subprocess.Popen([sys.executable, "worker.py", "--processes", str(processes)], cwd=project_root, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    async def run_one(turns: int) -> None:
        outcome = await client.execute_workflow(
            AgentTaskWorkflow.run,
            TaskInput(instruction=f"read the files, turns={turns} task={uuid.uuid4().hex}", workspace=workspace,
                      model="bench", stream=False, max_iterations=turns + 5, search_attributes=True),
            id=f"lean-procs-{uuid.uuid4().hex[:8]}", task_queue=queue, search_attributes=initial_search_attributes("bench"),
        )
        assert outcome.turns == turns, outcome

    try:
        await asyncio.gather(*(run_one(turns) for _ in range(processes * 2)))  # warm-up: every process
        started = time.perf_counter()
        await asyncio.gather(*(run_one(turns) for _ in range(tasks)))
        return tasks * turns / (time.perf_counter() - started)
    finally:
        supervisor.send_signal(signal.SIGTERM)
        supervisor.wait(60)


async def main(tasks: int, turns: int, long_turns: int, repeat: int, file_bytes: int, processes: int = 2,
               rounds: int = 5) -> None:
    quiet_logging()
    files = max(turns, long_turns)
    model, url = await start_model(ReadsPerTask(files))
    env = await start_local_env(extra_args=NO_EAGER_ACTIVITIES)
    wall = time.perf_counter()
    rates: dict[str, list[float]] = {"floor": [], "project": [], "activities": [], "processes": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            workspace = root / "ws"
            workspace.mkdir()
            workspace_with_files(workspace, files, file_bytes)
            store = ContextStore(root / ".store" / "context.db")
            systems = {"floor": floor(env.client, str(workspace), files),
                       "project": project(env.client, str(workspace), store, url)}
            single: dict[str, Figures] = {}
            for name, system in systems.items():
                async with system.worker():
                    single[name] = await measure(env.client, system.run_one, turns, long_turns, repeat)
            # Like for like with the floor's two activities a turn: every tool call an activity.
            systems["activities"] = project(env.client, str(workspace), store, url, local_tools=False)
            # The concurrent figure in rounds, the systems taking turns: the machine's speed
            # drifts over a run (a shared VM) and the server slows as it fills, so each round
            # compares neighbours, and the medians are reported.
            for _ in range(rounds):
                for name, system in systems.items():
                    async with system.worker():
                        rates[name].append(await concurrent(system.run_one, tasks, turns))
                if processes > 1:
                    rates["processes"].append(await processes_figure(env.client, str(workspace), root, url, tasks, turns,
                                                                     processes))
            f, p = single["floor"], single["project"]
            f.turns_per_s, p.turns_per_s = statistics.median(rates["floor"]), statistics.median(rates["project"])
            p.content = said_bytes(task_entries(store))
            multi = statistics.median(rates["processes"]) if rates["processes"] else None
            unlocal = statistics.median(rates["activities"])
    finally:
        model.terminate()
        await env.shutdown()
    wall = time.perf_counter() - wall

    print(f"lean turns: floor vs project, one dev server (in memory), one in-process worker, {file_bytes:,} B tool result per turn")
    print(f"{'':<40} {'floor':>10} {'project':>10} {'ratio':>7}")

    def row(label: str, a: float, b: float, fmt: str) -> None:
        print(f"{label:<40} {a:>10{fmt}} {b:>10{fmt}} {b / a:>7.2f}")

    row(f"turns/s, {tasks} tasks x {turns} turns at once", f.turns_per_s, p.turns_per_s, ".1f")
    row("  the same, every tool call an activity", f.turns_per_s, unlocal, ".1f")
    if multi is not None:
        row(f"  the same, worker.py --processes {processes}", f.turns_per_s, multi, ".1f")
    print(f"  (medians of {rounds} rounds; each round's floor/project/all-activities"
          + (f"/--processes {processes}" if multi is not None else "") + ": "
          + ", ".join("/".join(f"{rates[k][i]:.1f}" for k in ("floor", "project", "activities", "processes") if rates[k])
                      for i in range(rounds)) + ")")
    row(f"ms/turn, one {turns}-turn task (median of {repeat})", f.short_ms, p.short_ms, ".1f")
    row(f"ms/turn, one {long_turns}-turn task", f.long_ms, p.long_ms, ".1f")
    row(f"history B, {long_turns}-turn task", f.history, p.history, ",.0f")
    row(f"content B, {long_turns}-turn task", f.content, p.content, ",.0f")
    row(f"history / content, {long_turns} turns", f.ratio, p.ratio, ".2f")
    print()
    print("summary (project / floor; issue 17 targets in brackets)")
    summary = [
        ("concurrent throughput", f"{p.turns_per_s / f.turns_per_s:.2f}x  [>= 0.80]"
         + f"; every tool call an activity: {unlocal / f.turns_per_s:.2f}x"
         + (f"; --processes {processes}: {multi / f.turns_per_s:.2f}x" if multi is not None else "")),
        (f"ms/turn, {turns}-turn task", f"{p.short_ms / f.short_ms:.2f}x  [<= 1.15]"),
        (f"ms/turn, {long_turns}-turn task", f"{p.long_ms / f.long_ms:.2f}x  [<= 1.05]"),
        ("history / content", f"{p.ratio:.2f}   [<= 2.0; floor {f.ratio:.2f}]"),
        ("benchmark wall time", f"{wall:.0f} s"),
    ]
    for label, value in summary:
        print(f"  {label + ':':<28}{value}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=50, help="concurrent tasks")
    parser.add_argument("--turns", type=int, default=10, help="turns of each concurrent and short task")
    parser.add_argument("--long-turns", type=int, default=150, help="turns of the long task")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the short task (median)")
    parser.add_argument("--file-bytes", type=int, default=2048, help="bytes of each tool result")
    parser.add_argument("--processes", type=int, default=2,
                        help="also measure the concurrent figure with worker.py --processes N (0: skip)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the concurrent figure (median)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 5 x 3 turns, a 20-turn long task, 1 repeat")
    opts = parser.parse_args()
    if opts.quick:
        opts.tasks, opts.turns, opts.long_turns, opts.repeat, opts.rounds = 5, 3, 20, 1, 1
    asyncio.run(main(opts.tasks, opts.turns, opts.long_turns, opts.repeat, opts.file_bytes, opts.processes, opts.rounds))
