"""--profile (and TEMPORAL_PROFILE) pointing at a second dev server sends the commands and the
worker there, not to the embedded default; --address wins over the profile."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest_asyncio

from contracts.task import TaskOutcome, TaskState
from fakes.scripted import ScriptedModelServer, tool
from temporal.server import port_open, start_local_env
from tests.cli.test_background import ROOT, background_pids, embedded_env, starter


@pytest_asyncio.fixture
async def second_server():
    env = await start_local_env()
    try:
        yield env
    finally:
        await env.shutdown()


async def test_a_profile_sends_list_start_and_the_worker_to_its_server(tmp_path, workspace, client, second_server):
    target = second_server.client.service_client.config.target_host
    env = embedded_env(tmp_path, AGENT_MODEL="scripted-model")
    Path(env["TEMPORAL_CONFIG_FILE"]).write_text(f'[profile.other]\naddress = "{target}"\nnamespace = "default"\n')

    code, out, err = await starter(env, "start", "--profile", "other", "--workspace", str(workspace), "over there")
    assert code == 0, err
    workflow_id = out.strip().splitlines()[-1]
    # On that server no worker polls the queue: one line says what to run, connected there.
    assert "no worker polls task queue agent-tasks" in err
    assert "start one with: python starter.py worker --profile other" in err
    assert f"follow it with: python starter.py watch {workflow_id} --profile other" in err  # the hint keeps the flag
    handle = second_server.client.get_workflow_handle(workflow_id, result_type=TaskOutcome)
    assert (await handle.describe()).id == workflow_id

    code, out, err = await starter(env, "list", "--profile", "other")
    assert code == 0 and workflow_id in out, err
    code, out, err = await starter(dict(env, TEMPORAL_PROFILE="other"), "list")
    assert code == 0 and workflow_id in out, err
    here = client.service_client.config.target_host  # --address wins over the profile
    code, out, err = await starter(dict(env, TEMPORAL_PROFILE="other"), "list", "--address", here)
    assert code == 0 and workflow_id not in out, err

    # Nothing went to the embedded default: no server on its port, nothing in the background.
    assert not port_open("127.0.0.1", int(env["AGENT_EMBEDDED_PORT"]))
    assert not any(background_pids(env).values())

    steps = [tool("message", type="result", text="done over there")]
    with ScriptedModelServer(steps) as model:
        worker = subprocess.Popen(
            [sys.executable, "worker.py", "--processes", "1", "--profile", "other"], cwd=ROOT,
            env=dict(env, OPENAI_BASE_URL=model.url, OPENAI_API_KEY="test-key"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            outcome = await asyncio.wait_for(handle.result(), 90)
        finally:
            worker.terminate()
            worker.wait(30)
    assert outcome.status == TaskState.DONE and outcome.final_text == "done over there"
