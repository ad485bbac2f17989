"""Someone always runs a task: on the embedded default a background dev server and worker run
it with no other command; `stop` ends a task no worker serves; `run --demo` takes its task
with it when it ends. Real processes: starter.py, the pinned dev server, worker.py."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import select
import signal
import subprocess
import sys
import termios
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.pydantic import pydantic_data_converter

from cli.background import parts
from cli.commands.run import DEMO_ENDED
from contracts.task import TaskOutcome, TaskState
from fakes.scripted import ScriptedModelServer, tool
from fakes.step import Step
from temporal.server import port_open, running_pid
from tests.cli.test_cli import cli
from tests.ports import free_embedded_port
from tests.workflows.harness import scripted_worker, wait_for_state

ROOT = Path(__file__).resolve().parents[2]


def embedded_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This test's own embedded default: no address anywhere, its own data dir and port."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")}
    empty = tmp_path / "temporal.toml"
    empty.write_text("")  # so a profile in the home directory cannot point elsewhere
    env.update(AGENT_DATA_DIR=str(tmp_path / "data"), AGENT_EMBEDDED_PORT=str(free_embedded_port()),
               TEMPORAL_CONFIG_FILE=str(empty), AGENT_SHUTDOWN_GRACE_S="2", **extra)
    return env


async def starter(env: dict[str, str], *args: str, timeout_s: float = 120) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "starter.py"), *args, cwd=ROOT, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    return proc.returncode or 0, out.decode(), err.decode()


def background_pids(env: dict[str, str]) -> dict[str, int | None]:
    """The server's, the codec server's and each background worker's pid, by name."""
    return {part.name: running_pid(part.pid_file, part.marker) for part in parts(Path(env["AGENT_DATA_DIR"]))}


def worker_pids(env: dict[str, str]) -> dict[str, int | None]:
    return {name: pid for name, pid in background_pids(env).items() if name.startswith("worker")}


@contextlib.asynccontextmanager
async def embedded(tmp_path: Path, **extra: str) -> AsyncIterator[dict[str, str]]:
    """The environment of an embedded default; whatever it starts in the background is
    stopped at the end, pass or fail."""
    env = embedded_env(tmp_path, **extra)
    try:
        yield env
    finally:
        with contextlib.suppress(Exception):
            await starter(env, "server", "stop", timeout_s=60)
        for pid in background_pids(env).values():
            if pid is not None:
                os.kill(pid, signal.SIGKILL)


async def test_start_on_the_embedded_default_runs_the_task_to_done_with_no_other_command(tmp_path, workspace):
    steps = [tool("shell", command="echo hi"), tool("message", type="result", text="noted"),
             tool("message", type="result", text="noted")]  # the second after the reminder to verify
    with ScriptedModelServer(steps) as model:
        async with embedded(tmp_path, AGENT_MODEL="scripted-model", OPENAI_BASE_URL=model.url,
                            OPENAI_API_KEY="test-key") as env:
            code, out, err = await starter(env, "start", "--workspace", str(workspace), "take notes")
            assert code == 0, err
            assert "started the Temporal dev server in the background" in err
            assert f"started a worker for scripted-model · openai at {model.url} in the background" in err
            assert "python starter.py server stop" in err and "workers/agent-tasks@" in err
            client = await Client.connect(f"127.0.0.1:{env['AGENT_EMBEDDED_PORT']}",
                                          data_converter=pydantic_data_converter)
            handle = client.get_workflow_handle(out.strip().splitlines()[-1], result_type=TaskOutcome)
            outcome = await asyncio.wait_for(handle.result(), 90)
            assert outcome.status == TaskState.DONE and outcome.final_text == "noted"

            # A second command finds both running and says nothing about them.
            code, out, err = await starter(env, "status", handle.id)
            assert code == 0 and "DONE" in out and "background" not in err
            pids = background_pids(env)
            assert all(pids.values()), pids
            (worker_name, worker_pid), = worker_pids(env).items()
            code, out, _ = await starter(env, "server", "status")
            assert code == 0 and f"{worker_name}: running (pid {worker_pid})" in out
            assert f"worker for scripted-model · openai at {model.url} (task queue agent-tasks@" in out
            assert f"running (pid {pids['Temporal dev server']})" in out
            assert f"codec server: running (pid {pids['codec server']})" in out  # the UI reads compressed payloads
            code, out, _ = await starter(env, "server", "logs", "-n", "50")
            assert code == 0 and "temporal-server.log <==" in out and "worker started" in out

            code, out, _ = await starter(env, "server", "stop", timeout_s=60)
            assert code == 0 and f"{worker_name}: stopped" in out and "Temporal dev server: stopped" in out
            assert "codec server: stopped" in out
            assert not any(background_pids(env).values())
            code, out, _ = await starter(env, "server", "status")
            assert out.count("not running") == 3


async def test_stop_terminates_a_task_no_worker_polls_for_with_its_reason(client, task_queue, workspace):
    code, out, err = await cli(client, "start", "--workspace", str(workspace), "wait for me", queue=task_queue)
    assert code == 0 and f"no worker polls task queue {task_queue}" in err and "start one with: python starter.py worker" in err
    workflow_id = out.strip().splitlines()[-1]
    code, out, err = await cli(client, "stop", workflow_id, "--reason", "not needed after all")
    assert code == 0, err
    assert f"no worker polls task queue {task_queue}: terminated {workflow_id}" in out
    desc = await client.get_workflow_handle(workflow_id).describe()
    assert desc.status == WorkflowExecutionStatus.TERMINATED
    code, out, _ = await cli(client, "status", workflow_id)
    assert "TERMINATED" in out and "not needed after all" in out


async def test_stop_cancels_then_terminates_a_task_whose_worker_is_gone(client, task_queue, workspace):
    # The worker ran the task and stopped: it still counts as polling for a while, so the stop
    # waits its grace, then cancels, then terminates, since nothing acts on either.
    steps = [Step(tool_calls=[("shell", {"command": "true"})], delay_s=60)]
    async with scripted_worker(client, task_queue, steps):
        code, out, err = await cli(client, "start", "--workspace", str(workspace), "think long", queue=task_queue)
        workflow_id = out.strip().splitlines()[-1]
        await wait_for_state(client.get_workflow_handle(workflow_id), TaskState.THINKING)
    code, out, err = await cli(client, "stop", workflow_id, "--grace", "1", "--reason", "worker gone")
    assert code == 0, err
    assert "cancel requested" in out and f"terminated {workflow_id} (worker gone)" in out
    assert (await client.get_workflow_handle(workflow_id).describe()).status == WorkflowExecutionStatus.TERMINATED


async def test_stop_with_a_worker_ends_the_task_by_its_stop_signal(client, task_queue, workspace):
    steps = [Step(tool_calls=[("shell", {"command": "true"})], delay_s=60)]
    async with scripted_worker(client, task_queue, steps):
        code, out, err = await cli(client, "start", "--workspace", str(workspace), "think long", queue=task_queue)
        workflow_id = out.strip().splitlines()[-1]
        await wait_for_state(client.get_workflow_handle(workflow_id), TaskState.THINKING)
        code, out, err = await cli(client, "stop", workflow_id, "--grace", "30")
    assert code == 0, err
    assert f"{workflow_id} ended FAILED" in out and "cancel" not in out and "terminated" not in out


@pytest.fixture
def demo_env(client) -> Iterator[dict[str, str]]:
    env = dict(os.environ, TEMPORAL_ADDRESS=client.service_client.config.target_host, TEMPORAL_NAMESPACE="default")
    yield env


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGHUP])
async def test_a_demo_ended_by_ctrl_c_or_a_closed_terminal_ends_its_task_and_watch_says_so(
    client, workspace, demo_env, how
):
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "starter.py"), "run", "--demo", "--workspace", str(workspace), "note this",
        cwd=ROOT, env=demo_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        seen = b""
        while b"task task-" not in seen:
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line, "run --demo ended before starting its task"
            seen += line
        workflow_id = seen.split(b"task ", 1)[1].split()[0].decode()
        proc.send_signal(how)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    desc = await client.get_workflow_handle(workflow_id).describe()
    # The demo either finished before the signal landed, or its task ended with it: never left running.
    assert desc.status in (WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.TERMINATED)
    code, out, err = await cli(client, "watch", workflow_id)
    if desc.status == WorkflowExecutionStatus.TERMINATED:
        assert code == 1 and "TERMINATED" in out and DEMO_ENDED in out
    else:
        assert code == 0 and "DONE" in out


async def test_server_status_and_stop_leave_a_server_this_data_directory_did_not_start(client, tmp_path):
    env = embedded_env(tmp_path)
    env["AGENT_EMBEDDED_PORT"] = client.service_client.config.target_host.rsplit(":", 1)[1]  # the session's
    for action in ("status", "stop"):
        code, out, err = await starter(env, "server", action)
        assert code == 0, err
        assert "Temporal dev server: not started from this data directory, but one answers on 127.0.0.1:" in out
        assert "workers: none yet" in out or "not running" in out
    assert port_open("127.0.0.1", int(env["AGENT_EMBEDDED_PORT"]))  # still serving


async def test_closing_the_terminal_of_run_demo_ends_its_task(client, workspace, demo_env):
    master, slave = pty.openpty()

    def own_terminal() -> None:  # the pty becomes the child's controlling terminal, as a shell's is
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "starter.py"), "run", "--demo", "--workspace", str(workspace), "note this"],
        cwd=ROOT, env=dict(demo_env, TERM="xterm"), stdin=slave, stdout=slave, stderr=slave,
        preexec_fn=own_terminal, pass_fds=(slave,),
    )
    os.close(slave)
    try:
        screen = b""
        while b"task task-" not in screen or b" \xc2\xb7 " not in screen.split(b"task task-", 1)[1]:
            ready, _, _ = await asyncio.to_thread(select.select, [master], [], [], 60)
            assert ready, f"no task started; screen: {screen[-2000:]!r}"
            screen += os.read(master, 4096)
        workflow_id = "task-" + screen.split(b"task task-", 1)[1].split()[0].decode()
        os.close(master)  # the terminal window closes
        master = -1
        await asyncio.wait_for(asyncio.to_thread(proc.wait), 60)
    finally:
        if master >= 0:
            os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    desc = await client.get_workflow_handle(workflow_id).describe()
    assert desc.status in (WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.TERMINATED)
    if desc.status == WorkflowExecutionStatus.TERMINATED:
        code, out, err = await cli(client, "status", workflow_id)
        assert "TERMINATED" in out and DEMO_ENDED in out
