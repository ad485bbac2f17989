"""A task waiting for approval survives a restart of the Temporal dev server on its database."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.task import ApprovalDecision, TaskOutcome, TaskState
from fakes.scripted import tool
from temporal.server import port_open, temporal_cli
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start, tool_messages, wait_for_state
from workflows.task import AgentTaskWorkflow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(db: Path, port: int) -> subprocess.Popen:
    return subprocess.Popen(
        [temporal_cli(), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
         "--port", str(port), "--db-filename", str(db), "--log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


async def connect(port: int) -> Client:
    for _ in range(200):
        if port_open("127.0.0.1", port):
            try:
                return await Client.connect(f"127.0.0.1:{port}", data_converter=pydantic_data_converter)
            except RuntimeError:
                pass
        await asyncio.sleep(0.1)
    raise AssertionError("the dev server did not come up")


async def test_approval_after_the_dev_server_restarted_on_its_database(tmp_path, workspace):
    db, port, queue = tmp_path / "temporal.db", free_port(), "restart-queue"
    server = start_server(db, port)
    try:
        client = await connect(port)
        async with scripted_worker(client, queue, [tool("shell", command="sudo true")]):
            handle = await start(client, queue, make_input(workspace))
            await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        server.send_signal(signal.SIGKILL)  # as abrupt as a crash
        server.wait(10)
        server = start_server(db, port)
        client = await connect(port)
        handle = client.get_workflow_handle(handle.id, result_type=TaskOutcome)
        finish = tool("message", type="result", text="after the restart")
        async with scripted_worker(client, queue, [finish]) as model:
            status = await wait_for_state(handle, TaskState.WAITING_APPROVAL, timeout_s=30)
            digest = status.pending_approval.digest
            await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(
                approved=False, digest=digest, reason="not today", decided_by="tester"))
            outcome = await asyncio.wait_for(outcome_of(handle), 30)
        assert outcome.status == TaskState.DONE and outcome.final_text == "after the restart"
        assert "not today" in tool_messages(model.requests[0])[0]["content"]
    finally:
        server.kill()
        server.wait(10)


async def test_the_first_call_after_a_restart_waits_until_the_server_can_serve_it(tmp_path, workspace):
    from temporal.client import connect_when_up, wait_until_ready

    db, port, queue = tmp_path / "temporal.db", free_port(), "ready-queue"
    server = start_server(db, port)
    try:
        client = await connect(port)
        async with scripted_worker(client, queue, [tool("message", type="result", text="one")]):
            first = await start(client, queue, make_input(workspace))  # leave data in the database
            await first.result()
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        server = start_server(db, port)
        while not port_open("127.0.0.1", port):
            await asyncio.sleep(0.02)
        raw = await connect_when_up(target_host=f"127.0.0.1:{port}", data_converter=pydantic_data_converter)
        await wait_until_ready(raw)
        async with scripted_worker(raw, queue, [tool("message", type="result", text="two")]):
            handle = await raw.start_workflow(  # no retries needed: the server is ready
                AgentTaskWorkflow.run, make_input(workspace), id="after-restart", task_queue=queue,
                rpc_timeout=timedelta(seconds=5),
            )
            outcome = await asyncio.wait_for(outcome_of(handle), 30)
        assert outcome.final_text == "two"
    finally:
        server.kill()
        server.wait(10)
