"""Kill a worker process with SIGKILL while its LLM call is in flight; a new worker finishes the task."""

from __future__ import annotations

import asyncio
import signal
import uuid

from contracts.task import TaskState
from fakes.scripted import ScriptedModelServer, tool
from fakes.step import Step
from tests.worker_processes import spawn_worker
from tests.workflows.harness import make_input, outcome_of
from workflows.task import AgentTaskWorkflow


async def wait_for(predicate, timeout_s: float) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)


async def test_task_survives_worker_killed_during_llm_call(client, temporal_env, task_queue, workspace):
    target = client.service_client.config.target_host
    steps = [
        Step(tool_calls=[("shell", {"command": "echo lost > lost.txt"})], hold=True),
        tool("shell", command="echo resumed > resumed.txt"),
        tool("message", type="result", text="finished after the crash"),
    ]
    with ScriptedModelServer(steps) as model:
        first = spawn_worker(target, task_queue, model.url)
        second = None
        try:
            handle = await client.start_workflow(
                AgentTaskWorkflow.run, make_input(workspace, stream=True),
                id=f"crash-{uuid.uuid4().hex[:8]}", task_queue=task_queue,
            )
            await wait_for(lambda: model.hits() == 1, 30)  # the LLM call is in flight
            first.send_signal(signal.SIGKILL)
            first.wait(10)
            model.release()  # the answer goes nowhere: its worker is dead
            second = spawn_worker(target, task_queue, model.url)
            outcome = await asyncio.wait_for(outcome_of(handle), 90)
        finally:
            for proc in (first, second):
                if proc and proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
        model.assert_consumed()
    assert outcome.status == TaskState.DONE
    assert outcome.final_text == "finished after the crash"
    assert (workspace / "resumed.txt").read_text() == "resumed\n"
    assert not (workspace / "lost.txt").exists()
    assert model.hits() == 3
