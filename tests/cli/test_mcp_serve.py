"""`starter.py mcp-serve`: an MCP client (the SDK's) hands off a task, approves its dangerous
call and reads its result; and the same tools over streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from cli.mcp_access import TOKEN_FILE
from fakes.scripted import ScriptedModelServer, tool
from tests.mcp_support import free_port

ROOT = Path(__file__).resolve().parents[2]


def serve_env(client, task_queue: str, model_url: str) -> dict[str, str]:
    keep = ("PATH", "HOME", "AGENT_DATA_DIR", "AGENT_SANDBOX")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(TEMPORAL_ADDRESS=client.service_client.config.target_host, TEMPORAL_NAMESPACE="default",
               AGENT_TASK_QUEUE=task_queue, OPENAI_BASE_URL=model_url, OPENAI_API_KEY="test-key")
    return env


def payload(result) -> dict:
    assert not result.is_error, result.content
    if isinstance(result.structured_content, dict):
        data = result.structured_content
        return data.get("result", data) if set(data) == {"result"} else data
    return json.loads(result.content[0].text)


async def poll(mcp: Client, workflow_id: str, state: str, timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        status = payload(await mcp.call_tool("task_status", {"workflow_id": workflow_id}))
        if status["state"] == state:
            return status
        assert time.monotonic() < deadline, f"still {status['state']}, wanted {state}"
        await asyncio.sleep(0.2)


async def test_an_mcp_client_starts_a_task_approves_its_dangerous_call_and_reads_the_result(
    client, task_queue, workspace
):
    (workspace / "build").mkdir()
    done = tool("message", type="result", text="build removed")
    steps = [tool("shell", command="rm -rf build"), done, done]  # the second after the verification reminder
    with ScriptedModelServer(steps) as model:
        params = StdioServerParameters(
            command=sys.executable, cwd=str(ROOT), env=serve_env(client, task_queue, model.url),
            args=["starter.py", "mcp-serve", "--worker", "--model", "scripted-model", "--no-stream",
                  "--workspace", str(workspace)],
        )
        async with Client(params) as mcp:
            names = {t.name for t in (await mcp.list_tools()).tools}
            assert names == {"start_task", "task_status", "approve", "interject", "list_tasks"}
            started = payload(await mcp.call_tool("start_task", {"instruction": "remove the build folder",
                                                                 "workspace": str(workspace)}))
            workflow_id = started["workflow_id"]
            waiting = await poll(mcp, workflow_id, "WAITING_APPROVAL")
            pending = waiting["pending_approval"]
            assert pending["tool"] == "shell" and pending["arguments"] == {"command": "rm -rf build"}
            assert (workspace / "build").exists()
            decided = await mcp.call_tool("approve", {"workflow_id": workflow_id, "call_id": pending["call_id"]})
            assert "approved: shell call" in decided.content[0].text
            done = await poll(mcp, workflow_id, "DONE")
            listed = payload(await mcp.call_tool("list_tasks", {}))
        model.assert_consumed()
    assert done["final_text"] == "build removed"
    assert not (workspace / "build").exists()
    assert workflow_id in {t["workflow_id"] for t in (listed if isinstance(listed, list) else [])}


async def test_mcp_serve_speaks_streamable_http_to_a_client_with_its_token_only(client, task_queue, tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log = tmp_path / "stderr.txt"
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "starter.py", "mcp-serve", "--http", str(port), "--model", "scripted-model"],
            cwd=ROOT, env=serve_env(client, task_queue, "http://127.0.0.1:9/v1"),
            stdout=subprocess.DEVNULL, stderr=stderr,
        )
    try:
        token = await served_token(proc, url)
        async with httpx.AsyncClient() as http:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token},
                            {"Authorization": f"Basic {token}"}):
                answer = await http.post(url, json=INITIALIZE, headers={**headers, **MCP_HEADERS})
                assert answer.status_code == 401, headers
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http, \
                Client(streamable_http_client(url, http_client=http)) as mcp:
            tools = {t.name: t for t in (await mcp.list_tools()).tools}
            missing = await mcp.call_tool("task_status", {"workflow_id": "no-such-task"})
    finally:
        proc.terminate()
        proc.wait(10)
    assert tools["task_status"].annotations.read_only_hint is True
    assert tools["start_task"].input_schema["required"] == ["instruction"]
    assert missing.is_error and "no task with id no-such-task" in missing.content[0].text
    printed = [line for line in log.read_text().splitlines() if f"Authorization: Bearer {token}" in line]
    assert len(printed) == 1 and url in printed[0]  # once, where the operator can copy it


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def served_token(proc: subprocess.Popen, url: str) -> str:
    """The token the server made in its data directory, once it answers on ``url``."""
    token_file = Path(os.environ["AGENT_DATA_DIR"]) / TOKEN_FILE
    deadline = time.monotonic() + 30
    while True:
        try:
            if token_file.exists():
                async with httpx.AsyncClient() as http:
                    await http.get(url)
                return token_file.read_text().strip()
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "mcp-serve --http did not come up"
        await asyncio.sleep(0.3)
