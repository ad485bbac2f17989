"""Scale, measured: many tasks waiting on people, and many tasks at once on 1, 2, 4 processes.

    python -m benchmarks.scale approvals [--tasks 1000] [--shared-workspace]
    python -m benchmarks.scale workers [--tasks 200] [--turns 3] [--latency 2.0] [--processes 1,2,4]

(the third figure, a 10,000-turn task: ``python -m benchmarks.long_task --turns 10000``).

Workers run as a person runs them, ``worker.py --processes N`` in processes of their own,
against an in-memory dev server; the model is a local OpenAI-compatible server in a
process of its own. ``approvals``: every task's first call is a dangerous shell command, so
all of them wait; it prints the worker's resident memory with all of them waiting, the time
``starter.py list --pending`` takes, and the time to approve all and see every task finish.
``workers``: every task lists files until it has ``turns - 1`` results, then finishes; it
starts them all once every worker process polls, and prints turns/s and the CPU time the
worker processes (and their supervisor) spent per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client

from benchmarks.common import FINISH, Answer, ListThenFinish, start_env, start_model, tool_results
from contracts.task import ApprovalDecision, TaskInput, TaskState
from workflows.task import AgentTaskWorkflow

ROOT = Path(__file__).resolve().parent.parent
DANGEROUS = {"name": "shell", "arguments": json.dumps({"command": "rm -rf build"})}


def approvals_model(body: dict[str, Any]) -> dict[str, Any]:
    """``approvals``' model: a dangerous command first (the task waits for a person), then finish."""
    return DANGEROUS if tool_results(body) == 0 else FINISH


class Setup:
    """A dev server, the model process and worker processes (started by ``workers``)."""

    def __init__(self, answer: Answer, latency_s: float = 0.0, shared_workspace: bool = False) -> None:
        self.answer, self.latency_s, self.shared_workspace = answer, latency_s, shared_workspace
        self.queue = f"scale-{uuid.uuid4().hex[:8]}"
        self.dir = tempfile.TemporaryDirectory()
        self.procs: list[subprocess.Popen[bytes]] = []

    async def __aenter__(self) -> Setup:
        self.env = await start_env()
        self.client: Client = self.env.client
        self.model, url = await start_model(self.answer, self.latency_s)
        self.environ = {
            **os.environ, "TEMPORAL_ADDRESS": self.client.service_client.config.target_host,
            "TEMPORAL_NAMESPACE": self.client.namespace, "AGENT_TASK_QUEUE": self.queue,
            "AGENT_DATA_DIR": str(Path(self.dir.name) / "data"), "AGENT_MODEL": "bench",
            "OPENAI_BASE_URL": url,
        }
        return self

    def workers(self, processes: int) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, "worker.py", "--processes", str(processes)], cwd=ROOT,
                                env=self.environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    async def __aexit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.terminate()
            proc.wait(60)
        self.model.terminate()
        await self.env.shutdown()
        self.dir.cleanup()

    def task(self, i: int) -> TaskInput:
        """Task ``i``, in a workspace of its own (as each person's project is), or all in one
        (``--shared-workspace``: their checkpoints queue on its repository)."""
        workspace = Path(self.dir.name) / ("ws" if self.shared_workspace else f"ws-{i}")
        workspace.mkdir(exist_ok=True)
        return TaskInput(instruction=f"task {i}", workspace=str(workspace), model="bench", stream=False,
                         search_attributes=True)

    async def start(self, count: int) -> list[str]:
        ids = [f"scale-{i}-{uuid.uuid4().hex[:6]}" for i in range(count)]
        for chunk in range(0, count, 100):
            await asyncio.gather(*(self.client.start_workflow(AgentTaskWorkflow.run, self.task(i), id=ids[i],
                                                              task_queue=self.queue)
                                   for i in range(chunk, min(count, chunk + 100))))
        return ids

    async def count(self, query: str) -> int:
        return (await self.client.count_workflows(query)).count


def family(pid: int) -> list[int]:
    """A process and its children (a supervisor's worker processes)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return [pid]
    return [pid, *(p for c in children for p in family(int(c)))]


def rss_mb(pid: int) -> float:
    total = 0
    for p in family(pid):
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def cpu_s(pid: int) -> float:
    ticks = 0
    for p in family(pid):
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


async def until(check: Any, every_s: float = 1.0) -> None:
    while not await check():
        await asyncio.sleep(every_s)


async def approvals(tasks: int, shared_workspace: bool) -> None:
    async with Setup(approvals_model, shared_workspace=shared_workspace) as s:
        worker = s.workers(1)
        started = time.perf_counter()
        ids = await s.start(tasks)
        waiting = f"AgentState = '{TaskState.WAITING_APPROVAL.value}' AND ExecutionStatus = 'Running'"
        await until(lambda: _equal(s.count(waiting), tasks))
        all_waiting = time.perf_counter() - started
        await asyncio.sleep(5)  # settle: the worker's caches as they stay
        memory = rss_mb(worker.pid)
        listed_at = time.perf_counter()
        listing = subprocess.run([sys.executable, "starter.py", "list", "--pending"], cwd=ROOT, env=s.environ,
                                 capture_output=True, text=True, timeout=600)
        list_s = time.perf_counter() - listed_at
        approving = time.perf_counter()
        await _approve_all(s.client, ids)
        finished = f"ExecutionStatus = 'Completed' AND TaskQueue = '{s.queue}'"
        await until(lambda: _equal(s.count(finished), tasks))
        drain_s = time.perf_counter() - approving
    where = "one workspace for all" if shared_workspace else "a workspace each"
    print(f"tasks waiting for approval:   {tasks} on one worker process, {where} (all waiting after {all_waiting:.0f} s)")
    print(f"worker resident memory:       {memory:.0f} MB ({memory * 1024 / tasks:.0f} KB a waiting task)")
    print(f"list --pending:               {list_s:.1f} s (exit {listing.returncode}, {len(listing.stdout.splitlines())} lines)")
    print(f"approve all, every task done: {drain_s:.1f} s ({tasks / drain_s:.1f} tasks/s)")


async def _equal(count: Any, expected: int) -> bool:
    return await count == expected


async def _approve_all(client: Client, ids: list[str]) -> None:
    semaphore = asyncio.Semaphore(50)

    async def one(workflow_id: str) -> None:
        async with semaphore:
            handle = client.get_workflow_handle(workflow_id)
            status = await handle.query(AgentTaskWorkflow.status)
            pending = status.pending_approval
            assert pending is not None, status
            await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(
                approved=True, call_id=pending.call_id, digest=pending.digest, decided_by="benchmark"))

    await asyncio.gather(*(one(i) for i in ids))


async def workers(tasks: int, turns: int, latency_s: float, processes: list[int]) -> None:
    rows = []
    for n in processes:
        async with Setup(ListThenFinish(turns), latency_s) as s:
            proc = s.workers(n)
            await until(lambda s=s, n=n: _pollers(s.client, s.queue, n), 0.2)  # every process polling
            load = os.getloadavg()[0]
            cpu_before, started = cpu_s(proc.pid), time.perf_counter()
            ids = await s.start(tasks)
            outcomes = await asyncio.gather(*(s.client.get_workflow_handle_for(AgentTaskWorkflow.run, i).result()
                                              for i in ids))
            wall, cpu = time.perf_counter() - started, cpu_s(proc.pid) - cpu_before
            assert all(o.turns == turns for o in outcomes), [o for o in outcomes if o.turns != turns][:1]
            rows.append((n, wall, cpu, load))
    print(f"{tasks} tasks at once, {turns} turns each, model latency {latency_s:.1f} s (ideal {turns * latency_s:.0f} s)")
    print(f"{'processes':>9} {'wall s':>7} {'turns/s':>8} {'CPU ms/turn':>12} {'load before':>12}")
    for n, wall, cpu, load in rows:
        print(f"{n:>9} {wall:>7.1f} {tasks * turns / wall:>8.1f} {cpu / (tasks * turns) * 1000:>12.1f} {load:>12.2f}")
    print("CPU: the worker processes' and their supervisor's, user + system; load: the machine's "
          "1-minute load average as the tasks started (2 cores; the rounds before count in it)")


async def _pollers(client: Client, queue: str, processes: int) -> bool:
    """Whether ``processes`` workers poll ``queue`` (each process's identity is its own)."""
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    described = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(namespace=client.namespace, task_queue=TaskQueue(name=queue)))
    return len({p.identity for p in described.pollers}) >= processes


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    a = sub.add_parser("approvals")
    a.add_argument("--tasks", type=int, default=1000)
    a.add_argument("--shared-workspace", action="store_true", help="every task in one workspace")
    w = sub.add_parser("workers")
    w.add_argument("--tasks", type=int, default=200)
    w.add_argument("--turns", type=int, default=3)
    w.add_argument("--latency", type=float, default=2.0)
    w.add_argument("--processes", default="1,2,4")
    opts = parser.parse_args()
    if opts.what == "approvals":
        asyncio.run(approvals(opts.tasks, opts.shared_workspace))
    else:
        asyncio.run(workers(opts.tasks, opts.turns, opts.latency, [int(n) for n in opts.processes.split(",")]))
