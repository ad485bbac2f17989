"""A worker stopped with SIGTERM or SIGINT drains: it takes no new work, lets the running
tool call finish and report, and exits 0 without a fatal error at interpreter exit."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

from contracts.task import TaskState
from fakes.scripted import ScriptedModelServer, tool
from tests.worker_processes import ROOT, spawn_worker
from tests.workflows.harness import make_input, outcome_of, start, tool_messages, wait_for_state


def worker_process(target: str, task_queue: str, model_url: str, terminal: bool = False) -> subprocess.Popen:
    """``terminal``: in a process group of its own, as a terminal's foreground job is."""
    env = dict(os.environ)
    env.update(TEMPORAL_ADDRESS=target, TEMPORAL_NAMESPACE="default", AGENT_TASK_QUEUE=task_queue,
               OPENAI_BASE_URL=model_url, OPENAI_API_KEY="test-key", AGENT_SHUTDOWN_GRACE_S="20")
    return subprocess.Popen([sys.executable, "worker.py"], cwd=ROOT, env=env, start_new_session=terminal,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


async def exited(proc: subprocess.Popen, timeout_s: float) -> tuple[int, str]:
    code = await asyncio.to_thread(proc.wait, timeout_s)
    assert proc.stderr is not None
    return code, proc.stderr.read().decode()


async def test_sigterm_lets_the_running_tool_finish_and_exits_cleanly(client, task_queue, workspace):
    target = client.service_client.config.target_host
    steps = [tool("shell", command="sleep 2; echo done > done.txt"), tool("message", type="result", text="ok")]
    with ScriptedModelServer(steps) as model:
        first = worker_process(target, task_queue, model.url)
        second = None
        try:
            handle = await start(client, task_queue, make_input(workspace))
            await wait_for_state(handle, TaskState.EXECUTING_TOOL, timeout_s=30)
            first.send_signal(signal.SIGTERM)
            code, err = await exited(first, 30)
            assert code == 0, err
            assert "Fatal Python error" not in err and "Traceback" not in err
            assert (workspace / "done.txt").read_text() == "done\n"  # drained, not killed
            second = spawn_worker(target, task_queue, model.url)
            outcome = await asyncio.wait_for(outcome_of(handle), 60)
        finally:
            for proc in (first, second):
                if proc and proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
    assert outcome.status == TaskState.DONE
    told = tool_messages(model.requests[1])[0]["content"]
    assert "[exit code: 0]" in told and "[interrupted]" not in told


async def pollers(client, queue: str) -> int:
    """How many worker processes poll the queue (each has an identity of its own)."""
    reply = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
        namespace=client.namespace, task_queue=TaskQueue(name=queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    ))
    return len({p.identity for p in reply.pollers})


async def test_an_idle_worker_stops_cleanly_every_time(client):
    """`worker.py` runs one process per core (`--processes`); a stop reaches every one, once. A
    Ctrl-C at the terminal signals its whole foreground group: each process still gets it once
    (from the supervisor, the children being in a group of their own) and drains, rather than
    twice (which reads as "exit now", status 130)."""
    target = client.service_client.config.target_host
    processes = os.cpu_count() or 1
    for stop in ["SIGTERM", "SIGINT", "Ctrl-C"] * 3:
        queue = f"idle-{uuid.uuid4().hex[:8]}"
        proc = worker_process(target, queue, "http://127.0.0.1:9/v1", terminal=stop == "Ctrl-C")
        try:
            for _ in range(300):  # up once every process polls its task queue
                if await pollers(client, queue) >= processes:
                    break
                await asyncio.sleep(0.1)
            assert await pollers(client, queue) == processes
            if stop == "Ctrl-C":
                os.killpg(proc.pid, signal.SIGINT)
            else:
                proc.send_signal(signal.Signals[stop])
            code, err = await exited(proc, 30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        assert code == 0, err
        assert "Fatal Python error" not in err and "Traceback" not in err
        assert err.count("worker stopping") == processes and "second signal" not in err, err


async def test_a_worker_with_tasks_in_flight_stops_cleanly_ten_times_out_of_ten(client, workspace):
    """Issue 17's bar: SIGTERM while tasks are mid-turn (model calls and shell commands in
    flight on every process), ten times; each stop drains and exits 0 with a clean stderr."""
    target = client.service_client.config.target_host
    busy = [tool("shell", command="sleep 0.3; echo step >> steps.txt")] * 400  # more than the stops use
    with ScriptedModelServer(busy, strict=True) as model:
        for _ in range(10):
            queue = f"busy-{uuid.uuid4().hex[:8]}"
            proc = worker_process(target, queue, model.url)
            handles = []
            try:
                handles = [await start(client, queue, make_input(workspace)) for _ in range(4)]
                calls = model.hits()
                for _ in range(300):  # until the tasks are turning: their model calls arrive
                    if model.hits() >= calls + 4:
                        break
                    await asyncio.sleep(0.1)
                assert model.hits() >= calls + 4
                proc.send_signal(signal.SIGTERM)
                code, err = await exited(proc, 40)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
                for handle in handles:
                    await handle.terminate("test over")
            assert code == 0, err
            assert "Fatal Python error" not in err and "Traceback" not in err, err

