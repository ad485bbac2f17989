"""The CLI as a person uses it: subprocesses against the test session's dev server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from temporalio.client import WorkflowExecutionStatus

from contracts.task import TaskState
from fakes.scripted import tool
from fakes.step import Step
from tests.workflows.harness import scripted_worker, wait_for_state
from workflows.search_attributes import AGENT_STATE
from workflows.task import AgentTaskWorkflow

ROOT = Path(__file__).resolve().parents[2]


async def cli(client, *args: str, queue: str = "cli-none", cwd: Path | None = None, program: str | None = None,
              **env: str):
    environ = dict(os.environ)
    environ.update(
        TEMPORAL_ADDRESS=client.service_client.config.target_host,
        TEMPORAL_NAMESPACE="default",
        AGENT_TASK_QUEUE=queue,
        AGENT_MODEL="scripted-model",
    )
    environ.update(env)
    proc = await asyncio.create_subprocess_exec(
        *([program] if program else [sys.executable, str(ROOT / "starter.py")]), *args, cwd=cwd or ROOT, env=environ,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode, out.decode(), err.decode()


async def test_run_demo_finishes_a_task_end_to_end(client, workspace):
    code, out, err = await cli(client, "run", "--demo", "--workspace", str(workspace), "note this")
    assert code == 0, err
    assert "DONE" in out and "AGENT_DEMO.md" in out
    assert "note this" in (workspace / "AGENT_DEMO.md").read_text()


async def test_start_prints_the_id_last_and_status_json_reports_the_state(client, task_queue, workspace):
    steps = [tool("shell", command="sudo true"), tool("message", type="result", text="ok")]
    async with scripted_worker(client, task_queue, steps) as model:
        code, out, err = await cli(client, "start", "--workspace", str(workspace), "check things", queue=task_queue)
        assert code == 0, err
        workflow_id = out.strip().splitlines()[-1]
        assert workflow_id.startswith("task-check-things-")
        await wait_for_state(client.get_workflow_handle(workflow_id), TaskState.WAITING_APPROVAL)

        code, out, _ = await cli(client, "status", workflow_id, "--json")
        status = json.loads(out)
        assert code == 0 and status["state"] == "WAITING_APPROVAL"
        assert status["pending_approval"]["tool"] == "shell"

        code, out, _ = await cli(client, "list", "--waiting")
        assert workflow_id in out and out.splitlines()[0].split() == ["TASK", "STATE", "TURN", "COST", "AGE", "INSTRUCTION"]
        code, out, _ = await cli(client, "list", "--waiting", "--json")
        (row,) = [row for row in json.loads(out) if row["workflow_id"] == workflow_id]
        assert row["temporal_status"] == "RUNNING" and row["state"] == "WAITING_APPROVAL" and row["parent_id"] is None
        assert row["waiting"]["kind"] == "approval" and row["waiting"]["what"] == "shell: sudo true"
        assert row["waiting"]["command"] == f"python starter.py approve {workflow_id}" and row["started"].startswith("20")

        code, _, err = await cli(client, "approve", workflow_id, "--call", "nope")
        assert code == 2 and err.strip().startswith("error: decision rejected") and "\n" not in err.strip()

        # Without --call, the pending call is shown; a script must confirm it with --yes.
        code, out, err = await cli(client, "approve", workflow_id, "--deny", "--reason", "no root")
        assert code == 2 and "sudo true" in out and f"--call {status['pending_approval']['call_id']}" in err
        code, out, _ = await cli(client, "approve", workflow_id, "--deny", "--yes", "--reason", "no root")
        assert code == 0 and "sudo true" in out and "denied: shell call" in out
        outcome = await client.get_workflow_handle(workflow_id).result()
        assert outcome["status"] == "DONE"
        assert "no root" in model.requests[1]["messages"][-1]["content"]

        code, _, err = await cli(client, "stop", workflow_id)
        assert code == 2 and "is not running" in err


async def test_user_errors_are_one_clear_line(client, workspace):
    code, _, err = await cli(client, "status", "task-that-does-not-exist")
    assert code == 2 and err.strip() == "error: no task with id task-that-does-not-exist"
    code, _, err = await cli(client, "start", "x", AGENT_MODEL="")
    assert code == 2 and err.strip().startswith("error: no model configured")
    code, _, err = await cli(client, "list", TEMPORAL_ADDRESS="127.0.0.1:1")
    assert code == 2 and err.strip().startswith("error: cannot reach Temporal at 127.0.0.1:1")
    code, _, err = await cli(client, "start", "x", "--workspace", str(workspace / "missing"))
    assert code == 2 and "is not a directory" in err


async def test_watch_json_prints_the_event_stream_of_a_finished_task(client, task_queue, workspace):
    # A command that writes: a change the task is asked to check before it ends (a read is not).
    steps = [tool("shell", command="echo hi | tee hi.txt"), tool("message", type="result", text="said hi"),
             tool("message", type="result", text="said hi")]
    async with scripted_worker(client, task_queue, steps):
        code, out, err = await cli(client, "start", "--workspace", str(workspace), "say hi", queue=task_queue)
        workflow_id = out.strip().splitlines()[-1]
        await client.get_workflow_handle(workflow_id).result()
        code, out, err = await cli(client, "watch", workflow_id, "--json", queue=task_queue)
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    types = [e["type"] for e in events]
    assert types == [
        "thread.started",
        "item.completed",  # the user's instruction
        "turn.started", "item.started", "item.completed", "turn.completed",
        "turn.started", "item.started", "item.completed", "item.completed",  # a result, then the reminder
        "turn.completed", "turn.started", "item.started", "item.completed",
        "turn.completed", "task.completed",
    ]
    assert events[1]["item"] == {"id": "item_0", "type": "user_message", "text": "say hi"}
    assert events[3]["item"]["tool"] == "shell" and events[3]["item"]["arguments"] == {"command": "echo hi | tee hi.txt"}
    assert events[4]["item"]["status"] == "ok" and "hi" in events[4]["item"]["content"]
    assert events[9]["item"]["type"] == "system_reminder" and events[9]["item"]["reason"] == "verify"
    assert "say hi" in events[9]["item"]["text"] and "shell · echo hi | tee hi.txt" in events[9]["item"]["text"]
    assert events[-1]["status"] == "DONE" and events[-1]["final_text"] == "said hi"
    assert events[-1]["usage"]["input_tokens"] == 30


async def test_watch_shows_a_retry_with_its_reason_and_delay(client, task_queue, workspace):
    from fakes.scripted import error

    # The watch must join while the retry waits: 8 s leaves room for a loaded machine.
    steps = [error(429, "slow down", headers={"Retry-After": "8"}), tool("message", type="result", text="ok")]
    async with scripted_worker(client, task_queue, steps):
        code, out, err = await cli(client, "start", "--workspace", str(workspace), "retry me", queue=task_queue)
        workflow_id = out.strip().splitlines()[-1]
        code, out, err = await cli(client, "watch", workflow_id, "--json", queue=task_queue)
    assert code == 0, err
    retries = [json.loads(line) for line in out.splitlines() if '"type": "retry"' in line]
    assert len(retries) == 1
    assert retries[0]["activity"] == "llm_call" and retries[0]["attempt"] == 1
    assert "429" in retries[0]["reason"] and "slow down" in retries[0]["reason"]
    assert 0 <= retries[0]["next_in_s"] <= 8.5


async def test_a_cancelled_task_ends_canceled_and_the_cli_says_so_in_one_line(client, task_queue, workspace):
    steps = [Step(tool_calls=[("shell", {"command": "true"})], delay_s=40)]  # a 40 s model call
    async with scripted_worker(client, task_queue, steps):
        code, out, err = await cli(client, "start", "--workspace", str(workspace), "think long", queue=task_queue)
        workflow_id = out.strip().splitlines()[-1]
        handle = client.get_workflow_handle(workflow_id)
        await wait_for_state(handle, TaskState.THINKING)
        asked = asyncio.get_running_loop().time()
        await handle.cancel()
        while (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
            assert asyncio.get_running_loop().time() - asked < 5, "not Canceled within 5 s"
            await asyncio.sleep(0.1)
        desc = await handle.describe()
        assert desc.status == WorkflowExecutionStatus.CANCELED
        assert desc.typed_search_attributes.get(AGENT_STATE) == "CANCELLED"
        code, out, err = await cli(client, "status", workflow_id)
        assert code == 0 and "CANCELLED" in out and "Traceback" not in err
        code, out, err = await cli(client, "watch", workflow_id)
        assert code == 1 and "Traceback" not in err + out
        assert [line for line in out.splitlines() if "CANCELLED" in line] == [line for line in out.splitlines() if line.startswith("CANCELLED")]
        assert sum(line.startswith("CANCELLED") for line in out.splitlines()) == 1


async def test_a_terminated_task_is_reported_with_its_reason(client, task_queue, workspace):
    steps = [Step(tool_calls=[("shell", {"command": "true"})], delay_s=40)]
    async with scripted_worker(client, task_queue, steps):
        code, out, err = await cli(client, "start", "--workspace", str(workspace), "think long", queue=task_queue)
        workflow_id = out.strip().splitlines()[-1]
        handle = client.get_workflow_handle(workflow_id)
        await wait_for_state(handle, TaskState.THINKING)
        await handle.terminate(reason="maintenance window")
    code, out, err = await cli(client, "status", workflow_id)
    assert code == 0 and "TERMINATED" in out and "maintenance window" in out and "Traceback" not in err
    code, out, err = await cli(client, "watch", workflow_id)
    assert code == 1 and "TERMINATED" in out and "maintenance window" in out and "Traceback" not in err


async def test_approve_without_a_worker_says_so_quickly_and_takes_effect_when_one_starts(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, [tool("shell", command="git push")]):
        code, out, err = await cli(client, "start", "--workspace", str(workspace), "--verify", "off", "publish",
                                   queue=task_queue)
        workflow_id = out.strip().splitlines()[-1]
        handle = client.get_workflow_handle(workflow_id)
        await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        call_id = (await handle.query(AgentTaskWorkflow.status)).pending_approval.call_id
    # No worker polls the task's queue now: the call can't be shown, so it must be named.
    code, out, err = await cli(client, "approve", workflow_id, "--reason", "go ahead")
    assert code == 2 and "--call CALL_ID" in err and "Traceback" not in err
    code, out, err = await cli(client, "approve", workflow_id, "--call", call_id, "--reason", "go ahead")
    assert code == 0, err
    # Quickly: it waits for a worker's confirmation no longer than its bound, then says so (a
    # bound, not a wall-clock assertion: under CI's load starting the CLI alone takes seconds).
    assert "no worker answered within 5 s" in out and "python starter.py worker" in out and "Traceback" not in err
    async with scripted_worker(client, task_queue, [tool("message", type="result", text="pushed")]):
        outcome = await asyncio.wait_for(handle.result(), 30)
    assert outcome["status"] == "DONE"
    history = b"".join(e.SerializeToString() for e in (await handle.fetch_history()).events)
    assert b"shell call approved by" in history  # the decision reached the task once a worker came
