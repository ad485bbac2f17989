"""Side effects exactly as allowed, on the real dev server: dangerous commands wait for a
person however they are wrapped, an approval runs only the call it named, a secret sent by
a raw signal never reaches an activity, and no command runs twice after a crash."""

from __future__ import annotations

import asyncio
import signal
import uuid

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowUpdateFailedError

from contracts.task import ApprovalDecision, Interjection, TaskState
from core.messages import call_digest
from fakes.scripted import ScriptedModelServer, tool
from fakes.step import Step
from runtime.store import ContextStore
from tests import configured, sandboxing
from tests.worker_processes import spawn_worker
from tests.workflows.harness import (
    heartbeat_recorded,
    make_input,
    outcome_of,
    scripted_worker,
    signals_handled,
    start,
    tool_messages,
    user_texts,
    wait_for_state,
    wait_until,
)
from tests.workflows.test_server_restart import connect, free_port, start_server
from workflows.task import AgentTaskWorkflow

FEARED = [
    "bash -c 'rm -rf src'",
    'eval "rm -rf src"',
    "find . -name x -exec rm -rf {} +",
    "python3 -c \"import shutil; shutil.rmtree('src')\"",
    "kubectl delete namespace prod",
    "terraform destroy -auto-approve",
]


async def test_every_feared_command_waits_for_approval_in_a_real_task(client, task_queue, workspace):
    (workspace / "src").mkdir()
    (workspace / "src" / "x").write_text("keep me")
    steps = [tool("shell", command=c) for c in FEARED] + [tool("message", type="result", text="done")]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace))
        for command in FEARED:
            status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
            pending = status.pending_approval
            assert pending is not None and pending.arguments["command"] == command
            assert pending.danger == "dangerous" and pending.reason
            await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(
                approved=False, call_id=pending.call_id, digest=pending.digest, reason="no", decided_by="tester"))
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    assert (workspace / "src" / "x").read_text() == "keep me"


async def test_an_approval_of_one_call_never_runs_another(client, task_queue, workspace):
    (workspace / "build").mkdir()
    (workspace / "important_data").mkdir()
    steps = [
        tool("shell", command="rm -rf build"),
        tool("shell", command="rm -rf important_data"),  # what the model asks after the interjection
        tool("message", type="result", text="done"),
    ]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace))
        seen = (await wait_for_state(handle, TaskState.WAITING_APPROVAL)).pending_approval
        assert seen is not None and seen.digest == call_digest("shell", {"command": "rm -rf build"})
        # The person read `status` and is about to approve; meanwhile someone interjects.
        await handle.signal(AgentTaskWorkflow.interject, Interjection(text="clean the other one"))
        for _ in range(200):
            now = (await handle.query(AgentTaskWorkflow.status)).pending_approval
            if now is not None and now.digest != seen.digest:
                break
            await asyncio.sleep(0.05)
        assert now is not None and now.arguments["command"] == "rm -rf important_data"
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(
                approved=True, digest=seen.digest, decided_by="tester"))
        assert "changed since it was shown" in str(err.value.cause)
        # A signal with the stale digest is ignored as well: the call still waits.
        await handle.signal(AgentTaskWorkflow.approve, ApprovalDecision(approved=True, digest=seen.digest))
        await signals_handled(handle)
        assert (await handle.query(AgentTaskWorkflow.status)).state == TaskState.WAITING_APPROVAL
        await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(
            approved=False, digest=now.digest, reason="no", decided_by="tester"))
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    assert (workspace / "important_data").is_dir() and (workspace / "build").is_dir()


async def test_a_secret_in_a_raw_signal_reaches_no_activity_and_no_store(client, task_queue, workspace, monkeypatch):
    secret = "sk-raw-signal-" + uuid.uuid4().hex
    monkeypatch.setenv("AGENT_SECRET_DEPLOY_KEY", secret)
    steps = [
        Step(tool_calls=[("shell", {"command": "sleep 20"})]),
        tool("message", type="result", text="done"),
    ]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace))
        await wait_for_state(handle, TaskState.EXECUTING_TOOL)
        # As `temporal workflow signal` would send it: no CLI, no redaction on the way in.
        await handle.signal("interject", {"text": f"use the key {secret} for the deploy", "sent_by": "ops"})
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    said = user_texts(model.requests[1])[-1]
    assert secret not in str(model.requests) and "{{secret:DEPLOY_KEY}}" in said
    events = (await handle.fetch_history()).events
    holders = [e.event_type for e in events if secret.encode() in e.SerializeToString()]
    assert holders == [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]
    store = ContextStore(configured.store_path())
    dump = b"".join(line.encode() for line in store._conn().iterdump())
    assert secret.encode() not in dump
    assert "[interrupted]" in tool_messages(model.requests[1])[0]["content"]


@pytest.mark.parametrize("mode", ["required", "off"])
async def test_a_command_cut_off_by_a_worker_crash_dies_with_it_and_is_not_run_again(
    client, task_queue, workspace, mode, monkeypatch
):
    if mode == "required":
        sandboxing.require(monkeypatch)
    target = client.service_client.config.target_host
    command = "echo started >> log.txt; sleep 12; echo finished >> log.txt"
    steps = [tool("shell", command=command), tool("message", type="result", text="told")]
    with ScriptedModelServer(steps) as model:
        first = spawn_worker(target, task_queue, model.url, AGENT_SANDBOX=mode)
        second = None
        try:
            handle = await start(client, task_queue, make_input(workspace))
            log = workspace / "log.txt"
            await wait_until(lambda: log.exists() and log.read_text() == "started\n", 30)
            began = asyncio.get_running_loop().time()
            await heartbeat_recorded(handle)  # the server has the call's "started" heartbeat
            first.send_signal(signal.SIGKILL)
            first.wait(10)
            second = spawn_worker(target, task_queue, model.url, AGENT_SANDBOX=mode)
            outcome = await asyncio.wait_for(outcome_of(handle), 90)
            # Past the moment the command would have written "finished", had it outlived its worker.
            await asyncio.sleep(max(0.0, began + 13 - asyncio.get_running_loop().time()))
        finally:
            for proc in (first, second):
                if proc and proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
    assert outcome.status == TaskState.DONE and outcome.final_text == "told"
    assert (workspace / "log.txt").read_text() == "started\n"
    told = tool_messages(model.requests[1])[0]["content"]
    assert told.startswith("[interrupted]") and "may have partly run" in told


async def test_a_call_whose_completion_was_lost_in_a_server_outage_is_not_run_again(tmp_path, workspace):
    db, port, queue = tmp_path / "temporal.db", free_port(), "outage-queue"
    server = start_server(db, port)
    steps = [tool("shell", command="echo a >> r.txt; sleep 8"), tool("message", type="result", text="once")]
    try:
        client = await connect(port)
        async with scripted_worker(client, queue, steps) as model:
            handle = await start(client, queue, make_input(workspace))
            await wait_until(lambda: (workspace / "r.txt").exists(), 30)
            server.send_signal(signal.SIGTERM)
            server.wait(10)
            await asyncio.sleep(20)  # the command finishes while the server is away
            server = start_server(db, port)
            outcome = await asyncio.wait_for(outcome_of(handle), 120)
        assert outcome.status == TaskState.DONE and outcome.final_text == "once"
        assert (workspace / "r.txt").read_text() == "a\n"
        assert "[exit code: 0]" in tool_messages(model.requests[1])[0]["content"]
        # The completion was lost with the server: a later attempt returned the recorded result.
        attempts = [e.activity_task_started_event_attributes.attempt for e in (await handle.fetch_history()).events
                    if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED]
        assert max(attempts) >= 2
    finally:
        server.kill()
        server.wait(10)
