"""History is the only truth: a worker's disk is a cache, and losing it costs a resend, never the task."""

from __future__ import annotations

import asyncio
import shutil
import signal
import uuid

from contracts.task import TaskState
from fakes.scripted import ScriptedModelServer, Step, tool
from tests.workflows.harness import make_input, tool_messages, user_texts, wait_until
from tests.workflows.test_crash_resume import spawn_worker
from tests.workflows.test_task_loop import assert_every_tool_call_answered
from workflows.task import AgentTaskWorkflow

STEPS = 6


async def test_a_task_survives_losing_its_worker_and_the_whole_data_directory(client, task_queue, workspace, tmp_path):
    target = client.service_client.config.target_host
    steps = [tool("shell", command=f"echo {i} >> steps.log") for i in range(1, STEPS + 1)]
    steps += [
        Step(tool_calls=[("shell", {"command": "echo lost >> steps.log"})], hold=True),  # in flight at the crash
        tool("shell", command="echo after >> steps.log"),
        tool("message", type="result", text="all steps done"),
    ]
    first_dir, second_dir = tmp_path / "host-a", tmp_path / "host-b"
    with ScriptedModelServer(steps) as model:
        first = spawn_worker(target, task_queue, model.url, AGENT_DATA_DIR=str(first_dir))
        second = None
        try:
            handle = await client.start_workflow(
                AgentTaskWorkflow.run, make_input(workspace, "count to six", continue_as_new_after=2),
                id=f"lost-disk-{uuid.uuid4().hex[:8]}", task_queue=task_queue,
            )
            await wait_until(lambda: model.hits() == STEPS + 1, timeout_s=60)
            first.send_signal(signal.SIGKILL)
            await asyncio.get_running_loop().run_in_executor(None, first.wait, 10)
            assert (first_dir / "context.db").exists()
            shutil.rmtree(first_dir)  # the host is gone with its disk
            model.release()
            second = spawn_worker(target, task_queue, model.url, AGENT_DATA_DIR=str(second_dir))
            outcome = await asyncio.wait_for(handle.result(), 90)
        finally:
            for proc in (first, second):
                if proc and proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
    assert outcome.status == TaskState.DONE and outcome.final_text == "all steps done"
    assert outcome.runs >= 3  # it had continued as new at least twice before the crash
    lines = (workspace / "steps.log").read_text().split()
    assert lines == [str(i) for i in range(1, STEPS + 1)] + ["after"]  # every step once, the lost one never
    final = model.requests[-1]
    assert_every_tool_call_answered(final)
    assert user_texts(final)[0] == "count to six"  # the request survives in the history's prefix
    calls = [c["function"]["arguments"] for m in final["messages"] for c in m.get("tool_calls") or []]
    assert any("echo 1 >> steps.log" in args for args in calls)  # and so does what the earliest runs did
    assert len(tool_messages(final)) == STEPS + 1
