"""Tasks that Temporal closed (terminated, timed out) while a worker still polls their queue:
`watch` ends at once with one line saying how, and `list` shows it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta

from temporalio.client import Client

from contracts.task import TaskState
from fakes.step import Step
from tests.cli.test_cli import ROOT, cli
from tests.workflows.harness import make_input, scripted_worker, wait_for_state
from workflows.task import AgentTaskWorkflow

THINK_LONG = [Step(tool_calls=[("shell", {"command": "true"})], delay_s=40)]  # a 40 s model call


async def watch(client: Client, workflow_id: str, queue: str, timeout_s: float = 20) -> tuple[int | None, str, float]:
    """`watch ID` as a person runs it: (exit code or None if it had to be killed, output, seconds)."""
    environ = {**os.environ, "TEMPORAL_ADDRESS": client.service_client.config.target_host,
               "TEMPORAL_NAMESPACE": "default", "AGENT_TASK_QUEUE": queue}
    began = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "starter.py"), "watch", workflow_id, cwd=ROOT, env=environ,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        out, _ = await proc.communicate()
        return None, out.decode(), time.monotonic() - began
    return proc.returncode, out.decode(), time.monotonic() - began


def closing_lines(out: str, label: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(label)]


async def test_watch_of_a_task_terminated_under_a_polling_worker_returns_with_one_terminated_line(
    client, task_queue, workspace
):
    async with scripted_worker(client, task_queue, THINK_LONG):
        code, out, err = await cli(client, "start", "--workspace", str(workspace), "think long", queue=task_queue)
        workflow_id = out.strip().splitlines()[-1]
        handle = client.get_workflow_handle(workflow_id)
        await wait_for_state(handle, TaskState.THINKING)
        following = asyncio.ensure_future(watch(client, workflow_id, task_queue))
        await asyncio.sleep(4)  # the watcher is up and following
        await handle.terminate(reason="maintenance window")
        code, out, took = await following
        assert code == 1, f"watch did not return after the terminate: {out}"
        assert len(closing_lines(out, "TERMINATED")) == 1 and "maintenance window" in out

        code, out, took = await watch(client, workflow_id, task_queue)  # a worker still polls the queue
        assert code == 1 and took < 12, f"watch of a terminated task did not return at once ({took:.0f} s): {out}"
        assert len(closing_lines(out, "TERMINATED")) == 1 and "Traceback" not in out

        code, out, err = await cli(client, "list", "--limit", "500", "--json", queue=task_queue)
        (row,) = [row for row in json.loads(out) if row["workflow_id"] == workflow_id]
        assert [row["temporal_status"], row["state"]] == ["TERMINATED", "TERMINATED"], row


async def test_watch_and_list_of_a_task_that_timed_out_say_timed_out(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, THINK_LONG):
        workflow_id = f"test-task-{uuid.uuid4().hex[:8]}"
        await client.start_workflow(AgentTaskWorkflow.run, make_input(workspace), id=workflow_id,
                                    task_queue=task_queue, execution_timeout=timedelta(seconds=3))
        code, out, took = await watch(client, workflow_id, task_queue)
        assert code == 1, f"watch did not return after the timeout: {out}"
        assert len(closing_lines(out, "TIMED OUT")) == 1 and "Traceback" not in out
        code, out, err = await cli(client, "list", "--limit", "500", "--json", queue=task_queue)
        (row,) = [row for row in json.loads(out) if row["workflow_id"] == workflow_id]
        assert [row["temporal_status"], row["state"]] == ["TIMED_OUT", "TIMED_OUT"], row
