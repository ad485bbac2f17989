"""On the embedded default a worker's settings are its own (issue 40): a second terminal with
no model settings looks at and decides on a task without touching its worker, and a `run`
with other settings gets a worker of its own; the installed `durable-agent` command and a
checkout find one data directory, and so share one worker for one set of settings. Real
processes: starter.py, an installed copy's console script, the pinned dev server, background
worker.py processes, scripted model servers."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.task import TaskOutcome, TaskState
from fakes.scripted import ScriptedModelServer, tool
from runtime.paths import APP_NAME
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


def installed_copy(prefix: Path) -> Path:
    """What ``pip install .`` lays down, without the network: the wheel's modules and packages
    in a site folder of their own (no pyproject.toml beside them), and a ``bin/durable-agent``
    console script as pip writes it. Returns the script."""
    site, bin_dir = prefix / "site", prefix / "bin"
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    site.mkdir(parents=True)
    for module in setuptools["py-modules"]:
        shutil.copy(ROOT / f"{module}.py", site)
    for pattern in setuptools["packages"]["find"]["include"]:
        shutil.copytree(ROOT / pattern.rstrip("*"), site / pattern.rstrip("*"),
                        ignore=shutil.ignore_patterns("__pycache__"))
    bin_dir.mkdir()
    script = bin_dir / "durable-agent"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom starter import entry\n"
                      f"if __name__ == '__main__':\n    sys.exit(entry())\n")
    script.chmod(0o755)
    return script


async def command(env: dict[str, str], argv: list[str], cwd: Path) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_the_installed_command_and_a_checkout_share_one_data_directory_and_one_worker(tmp_path):
    script = installed_copy(tmp_path / "installed")
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    steps = [tool("message", type="result", text="noted"), tool("message", type="result", text="noted")]
    with ScriptedModelServer(steps) as model:
        async with embedded(tmp_path) as base:
            data = tmp_path / "xdg" / APP_NAME
            base["AGENT_DATA_DIR"] = str(data)  # what the clean-up stops: the rule's directory
            env = with_model({k: v for k, v in base.items() if k != "AGENT_DATA_DIR"}, "model-x", model)
            env.update(XDG_DATA_HOME=str(tmp_path / "xdg"), HOME=str(tmp_path / "home"))
            installed = dict(env, PYTHONPATH=str(script.parent.parent / "site"))

            code, out, err = await command(installed, [str(script), "start", "note here"], here)
            assert code == 0, err
            assert f"(log: {data / 'temporal-server.log'}); stop it with: durable-agent server stop" in err
            assert f"started a worker for model-x · openai at {model.url}" in err
            first = out.strip().splitlines()[-1]
            (worker_pid,) = worker_pids(base).values()
            assert worker_pid and str(script.parent.parent / "site" / "worker.py") in Path(
                f"/proc/{worker_pid}/cmdline").read_text()  # the installed copy's worker

            # The checkout, from another directory, with the same settings: the same worker.
            code, out, err = await command(env, [sys.executable, str(ROOT / "starter.py"), "start", "note there"], there)
            assert code == 0 and "started" in err and "started a worker" not in err and "dev server" not in err, err
            second = out.strip().splitlines()[-1]
            code, out, _ = await command(env, [sys.executable, str(ROOT / "starter.py"), "server", "status"], there)
            assert code == 0 and f"running (pid {worker_pid}) · log {data / 'workers'}" in out, out
            assert worker_pids(base) == {name: worker_pid for name in worker_pids(base)}

            client = await Client.connect(f"127.0.0.1:{base['AGENT_EMBEDDED_PORT']}",
                                          data_converter=pydantic_data_converter)
            queues = set()
            for workflow_id in (first, second):
                handle = client.get_workflow_handle(workflow_id, result_type=TaskOutcome)
                outcome = await asyncio.wait_for(handle.result(), 60)
                assert outcome.status == TaskState.DONE
                queues.add((await handle.describe()).task_queue)
            assert len(queues) == 1, queues
            model.assert_consumed()
