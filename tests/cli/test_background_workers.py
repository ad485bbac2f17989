"""On the embedded default a worker's settings are its own (issue 40): a second terminal with
no model settings looks at and decides on a task without touching its worker, and a `run`
with other settings gets a worker of its own. Real processes: starter.py, the pinned dev
server, background worker.py processes, scripted model servers."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.task import TaskOutcome, TaskState
from fakes.scripted import ScriptedModelServer, tool
from tests.cli.test_background import ROOT, embedded, starter, worker_pids
from tests.workflows.harness import wait_for_state

MODEL_VARS = ("AGENT_MODEL", "AGENT_PROVIDER", "AGENT_FALLBACK", "OPENAI_BASE_URL", "OPENAI_API_KEY",
              "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")


def without_model(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in MODEL_VARS}


def with_model(env: dict[str, str], model: str, server: ScriptedModelServer) -> dict[str, str]:
    return dict(without_model(env), AGENT_MODEL=model, OPENAI_BASE_URL=server.url, OPENAI_API_KEY="test-key")


async def test_a_terminal_without_model_settings_replaces_no_worker_and_other_settings_get_their_own(
    tmp_path, workspace
):
    a_steps = [tool("shell", command="sudo true"), tool("message", type="result", text="done on model a"),
               tool("message", type="result", text="done on model a")]  # the second after the reminder to verify
    c_steps = [tool("message", type="result", text="done on model c")]
    with ScriptedModelServer(a_steps) as model_a, ScriptedModelServer(c_steps) as model_c:
        async with embedded(tmp_path) as base:
            a = with_model(base, "model-a", model_a)
            b = without_model(base)
            code, out, err = await starter(a, "start", "--workspace", str(workspace), "needs root")
            assert code == 0, err
            workflow_id = out.strip().splitlines()[-1]
            client = await Client.connect(f"127.0.0.1:{base['AGENT_EMBEDDED_PORT']}",
                                          data_converter=pydantic_data_converter)
            handle = client.get_workflow_handle(workflow_id, result_type=TaskOutcome)
            await wait_for_state(handle, TaskState.WAITING_APPROVAL)
            before = worker_pids(a)
            assert len(before) == 1 and all(before.values()), before
            a_queue = (await handle.describe()).task_queue
            assert a_queue.startswith("agent-tasks@")

            # Terminal B looks and decides; no model settings, no worker started or replaced.
            watch = await asyncio.create_subprocess_exec(
                sys.executable, str(ROOT / "starter.py"), "watch", workflow_id, cwd=ROOT, env=b,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for command in (["status", workflow_id], ["list"], ["approve", workflow_id, "--yes"]):
                code, out, err = await starter(b, *command)
                assert code == 0, (command, err)
                assert "worker" not in err, (command, err)
            out_b, err_b = await asyncio.wait_for(watch.communicate(), 90)
            assert watch.returncode == 0 and "DONE" in out_b.decode(), err_b.decode()
            outcome = await asyncio.wait_for(handle.result(), 60)
            assert outcome.status == TaskState.DONE and outcome.final_text == "done on model a"
            assert worker_pids(a) == before  # the same worker, nothing beside it
            model_a.assert_consumed()  # A's model answered every call of A's task
            a_calls = model_a.hits()

            # A run with other settings gets its own worker; A's goes on unchanged.
            code, out, err = await starter(with_model(base, "model-c", model_c), "run", "--workspace",
                                           str(workspace), "something else")
            assert code == 0 and "DONE" in out, err
            assert f"started a worker for model-c · openai at {model_c.url}" in err
            after = worker_pids(a)
            assert len(after) == 2 and all(after.values()) and set(before.items()) <= set(after.items()), after
            model_c.assert_consumed()
            assert model_a.hits() == a_calls  # C's task went to C's model only

            # The same settings again reuse that worker.
            model_a.add(tool("message", type="result", text="again on a"))
            code, out, err = await starter(a, "start", "--workspace", str(workspace), "again")
            assert code == 0 and "started a worker" not in err, err
            again = client.get_workflow_handle(out.strip().splitlines()[-1], result_type=TaskOutcome)
            assert (await asyncio.wait_for(again.result(), 60)).final_text == "again on a"
            assert worker_pids(a) == after
            model_a.assert_consumed()

            code, out, _ = await starter(b, "server", "status")
            assert code == 0 and f"worker for model-a · openai at {model_a.url} (task queue {a_queue})" in out
            assert f"worker for model-c · openai at {model_c.url}" in out
            code, out, _ = await starter(b, "server", "stop", timeout_s=90)
            assert code == 0 and out.count(": stopped") == 4, out  # two workers, the codec server, the server
            assert not any(worker_pids(a).values())
