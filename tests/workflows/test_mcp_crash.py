"""SIGKILL a worker process in the middle of a slow MCP call: its stdio server dies with it
(never orphaned), and a new worker finishes the task."""

from __future__ import annotations

import asyncio
import signal
import uuid

from contracts.task import TaskState
from fakes.scripted import ScriptedModelServer, tool
from tests.mcp_support import alive, kit_stdio, marks, pids
from tests.worker_processes import spawn_worker
from tests.workflows.harness import make_input, outcome_of, tool_messages
from tests.workflows.test_crash_resume import wait_for
from workflows.task import AgentTaskWorkflow


async def test_task_finishes_after_its_worker_is_killed_during_a_slow_mcp_call(client, task_queue, workspace, tmp_path):
    target = client.service_client.config.target_host
    marker = tmp_path / "marker"
    steps = [tool("mcp__kit__slow", seconds=3), tool("message", type="result", text="finished after the crash")]
    inp = make_input(workspace, mcp_servers={"kit": kit_stdio(marker)})
    with ScriptedModelServer(steps) as model:
        first = spawn_worker(target, task_queue, model.url)
        second = None
        try:
            handle = await client.start_workflow(
                AgentTaskWorkflow.run, inp, id=f"mcp-crash-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
            await wait_for(lambda: marks(marker, "slow") == 1, 60)  # the call is in the server
            (server_pid,) = pids(marker)
            first.send_signal(signal.SIGKILL)
            first.wait(10)
            await wait_for(lambda: not alive(server_pid), 10)  # the kernel took the server down too
            second = spawn_worker(target, task_queue, model.url)
            outcome = await asyncio.wait_for(outcome_of(handle), 120)
            second.send_signal(signal.SIGTERM)  # a graceful stop stops its MCP servers
            assert second.wait(40) == 0
        finally:
            for proc in (first, second):
                if proc and proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
        model.assert_consumed()
    assert outcome.status == TaskState.DONE
    assert outcome.final_text == "finished after the crash"
    assert marks(marker, "slow") == 2  # read-only: run again on the new worker's own server
    assert len(pids(marker)) == 2
    assert "slept 3 s" in tool_messages(model.requests[-1])[0]["content"]
    assert not any(alive(pid) for pid in pids(marker))  # the second worker stopped its server on exit
