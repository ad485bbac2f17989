"""The CLI right after a worker restart: the worker that ran a task was killed and a new one
started; the task is still pinned to the dead one's own (sticky) queue, where Temporal holds
its queries for a while. The commands a person runs then ride through it."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from temporalio.client import WorkflowHandle

from contracts.task import TaskOutcome, TaskState
from fakes.scripted import ScriptedModelServer, tool
from tests.cli.test_cli import cli
from tests.worker_processes import spawn_worker
from tests.workflows.harness import outcome_of, wait_for_state


def kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)


@asynccontextmanager
async def restarted_while_waiting(client, task_queue, workspace) -> AsyncIterator[WorkflowHandle]:
    """A task waiting for approval of `git push`; its worker SIGKILLed, a new one started
    two seconds ago. Once approved, it finishes with "pushed"."""
    target = client.service_client.config.target_host
    steps = [tool("shell", command="git push"), tool("message", type="result", text="pushed")]
    with ScriptedModelServer(steps) as model:
        first = spawn_worker(target, task_queue, model.url)
        second = None
        try:
            code, out, err = await cli(client, "start", "--workspace", str(workspace), "--verify", "off", "publish",
                                       queue=task_queue)
            handle = client.get_workflow_handle(out.strip().splitlines()[-1], result_type=TaskOutcome)
            await wait_for_state(handle, TaskState.WAITING_APPROVAL, timeout_s=60)
            kill(first)
            second = spawn_worker(target, task_queue, model.url)
            await asyncio.sleep(2)  # the second worker is up and polling the queue before the test goes on
            yield handle
        finally:
            for proc in (first, second):
                if proc is not None:
                    kill(proc)


async def test_approve_two_seconds_after_a_worker_restart_shows_the_call_and_the_task_goes_on(
    client, task_queue, workspace
):
    async with restarted_while_waiting(client, task_queue, workspace) as handle:
        code, out, err = await cli(client, "approve", handle.id, "--yes", "--reason", "go", queue=task_queue)
        assert code == 0, err
        assert "git push" in out and "approved: shell call" in out and "Traceback" not in err
        outcome = await asyncio.wait_for(outcome_of(handle), 30)
    assert outcome.status == TaskState.DONE and outcome.final_text == "pushed"


@pytest.mark.parametrize("command", [["status"], ["list", "--pending", "--limit", "500"], ["interject", "also tag it"]])
async def test_a_command_two_seconds_after_a_worker_restart_gets_its_answer(client, task_queue, workspace, command):
    async with restarted_while_waiting(client, task_queue, workspace) as handle:
        name, *rest = command
        args = [name, handle.id, *rest] if name != "list" else command
        code, out, err = await cli(client, *args, queue=task_queue)
        assert code == 0, err
        if name == "status":
            assert "WAITING_APPROVAL" in out
        elif name == "list":
            assert "shell: git push (" in out and f"python starter.py approve {handle.id}" in out
        else:
            assert out.strip() == f"message delivered to {handle.id}"
