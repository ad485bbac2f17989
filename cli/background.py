"""Someone always runs a task: on the embedded default, the Temporal dev server runs in the
background, and beside it a worker for each model's settings, each started by the first
command that needs it and said in one line.

They are detached (they outlive the terminal) and keep a log and a pid file in the data
directory; ``server status|stop|logs`` shows and stops them. A worker serves its tasks with
the settings it started with, so settings are never swapped under it: a ``run`` or ``start``
whose model settings differ gets its own worker on its own task queue (cli/worker_records.py),
and a command that only looks or decides (``status``, ``watch``, ``approve``…) starts, stops
or replaces no worker. On a real cluster nothing is started here: workers are the operator's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from temporalio.api.enums.v1 import TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

import worker
from cli.hints import invoked
from cli.tasks import UserError
from cli.worker_records import WorkerFiles, files_for, known, queue_for, served_model
from cli.workers import RPC_TIMEOUT
from contracts.task import DEFAULT_TASK_QUEUE
from core.settings import Settings
from runtime.paths import data_dir
from runtime.settings import child_environment
from temporal import client as temporal_client
from temporal.codec import codec_for
from temporal.connection import as_arguments
from temporal.server import (
    CODEC_LOG,
    CODEC_MARKER,
    CODEC_PID,
    EMBEDDED_HOST,
    SERVER_LOG,
    SERVER_PID,
    ensure_embedded_server,
    port_open,
    running_pid,
    spawn_detached,
)

LOCK = "background.lock"
WORKER_SCRIPT = Path(worker.__file__).resolve()
SERVER_MARKER, WORKER_MARKER = "start-dev", WORKER_SCRIPT.name
START_WAIT_S = 60.0  # importing, checking the sandbox and the store, connecting: seconds
STOP_WAIT_S = 10.0  # after the worker's own shutdown grace
STOP_HOW = "server stop"


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def connect(settings: Settings) -> Client:
    """A client of the cluster ``settings`` name; on the embedded default, with the dev server
    running (started, and said in one line, when it was not). No worker is started, stopped
    or replaced: a command that only looks or decides leaves them as they are."""
    if not settings.temporal.embedded:
        return await temporal_client.connect(settings)
    directory = data_dir(settings.paths)
    with _locked(directory / LOCK):  # two commands at once start one server, not two
        server = await ensure_embedded_server(settings.paths, port=settings.temporal.embedded_port,
                                           codec=codec_for(settings.codec) is not None)
    if server:
        say(f"started the Temporal dev server in the background (log: {directory / SERVER_LOG}); "
            f"stop it with: {invoked(STOP_HOW, settings.temporal)}")
    return await temporal_client.connect(settings, start_embedded=False)


async def connect_serving(settings: Settings) -> tuple[Client, str]:
    """``connect``, and the task queue the tasks of a command with these settings go on. On
    the embedded default a background worker with exactly these settings polls it (started,
    and said, when none did); other workers and their tasks are left alone."""
    client = await connect(settings)
    if not settings.temporal.embedded:
        return client, worker.task_queue(settings.temporal)
    queue = queue_for(settings)
    files = files_for(data_dir(settings.paths), queue)
    with _locked(files.lock):  # one worker per queue, however many commands start at once
        started = await ensure_worker(client, settings, files)
    if started:
        say(f"started a worker for {served_model(settings)} in the background (task queue {queue}, log: "
            f"{files.log}); stop it with: {invoked(STOP_HOW, settings.temporal)}")
    return client, queue


async def ensure_worker(client: Client, settings: Settings, files: WorkerFiles) -> bool:
    """Start the background worker of ``files.queue`` unless one runs (from this data
    directory, or a live process on this host polling it: an installed copy and a checkout
    never run two on one queue); True if started."""
    if running_pid(files.pid, WORKER_MARKER) is not None or await _polled_here(client, files.queue):
        return False
    command = [sys.executable, str(WORKER_SCRIPT), "--processes", "1", "--task-queue", files.queue,
               *as_arguments(settings.temporal)]
    # It runs from its own folder: the data directory is handed over absolute, not re-read from there.
    env = child_environment(AGENT_DATA_DIR=str(data_dir(settings.paths)))
    proc = spawn_detached(command, files.log, files.pid, cwd=WORKER_SCRIPT.parent, env=env)
    files.write_record(settings)
    await _until_polling(client, files.queue, proc, files.log)
    return True


async def _polled_here(client: Client, queue: str) -> bool:
    """Whether a worker process alive on this host polls ``queue`` (its identity is pid@host)."""
    host = socket.gethostname()
    for identity in await pollers(client, queue):
        pid, _, rest = identity.partition("@")
        if pid.isdigit() and rest.split(".")[0] == host.split(".")[0] and _alive(int(pid)):
            return True
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


async def _until_polling(client: Client, queue: str, proc: subprocess.Popen, log: Path) -> None:
    """Wait until worker ``proc`` polls ``queue``; a UserError with its last words if it exits."""
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            last = (_tail(log, 1) or ["no output"])[-1]
            raise UserError(f"the background worker exited at start: {last} (log: {log})")
        if any(identity.startswith(f"{proc.pid}@") for identity in await pollers(client, queue)):
            return
        await asyncio.sleep(0.25)
    raise UserError(f"the background worker did not poll task queue {queue} within {START_WAIT_S:.0f} s (log: {log})")


async def pollers(client: Client, queue: str) -> list[str]:
    """The identities of the workers polling ``queue`` for workflow tasks (Temporal's
    DescribeTaskQueue); empty when it cannot be told."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    try:
        response = await client.workflow_service.describe_task_queue(request, timeout=RPC_TIMEOUT)
    except RPCError:
        return []
    return [poller.identity for poller in response.pollers]


# ---- server status | stop | logs ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Part:
    """One process run in the background: its name, pid file, log, and what its command line holds."""

    name: str
    pid_file: Path
    log: Path
    marker: str
    worker: bool = False


EARLIER_WORKER = "background-worker"  # the one worker of versions before a queue per settings


def parts(directory: Path) -> list[Part]:
    """The server, its codec server, and every background worker this data directory started."""
    found = [Part("Temporal dev server", directory / SERVER_PID, directory / SERVER_LOG, SERVER_MARKER),
             Part("codec server", directory / CODEC_PID, directory / CODEC_LOG, CODEC_MARKER)]
    for files in known(directory):
        found.append(Part(f"worker for {files.model()} (task queue {files.queue})", files.pid, files.log,
                          WORKER_MARKER, worker=True))
    earlier = directory / f"{EARLIER_WORKER}.pid"
    if earlier.is_file():  # an upgrade found it running: stop and show it like the others
        found.append(Part(f"worker of an earlier version (task queue {DEFAULT_TASK_QUEUE})", earlier,
                          directory / f"{EARLIER_WORKER}.log", WORKER_MARKER, worker=True))
    return found


def status_lines(settings: Settings) -> list[str]:
    """Each background process, running or not; every worker with the model it serves."""
    directory = data_dir(settings.paths)
    port = settings.temporal.embedded_port
    lines = []
    found = parts(directory)
    for part in found:
        pid = running_pid(part.pid_file, part.marker)
        state = f"running (pid {pid})" if pid is not None else _not_ours(part, port) or "not running"
        lines.append(f"{part.name}: {state} · log {part.log}")
    if not any(part.worker for part in found):
        lines.append("workers: none yet (a run or start with a model starts one for its settings)")
    lines.append(f"address {EMBEDDED_HOST}:{port} · UI {temporal_client.ui_base_url(settings.temporal)}")
    if not settings.temporal.embedded:
        lines.append(f"this command's Temporal is {settings.temporal.address}: tasks there are run by the "
                     f"workers you start ({invoked('worker', settings.temporal)}), not by these")
    return lines


def stop(settings: Settings) -> list[str]:
    """Stop every worker (each drains its running activities first), then the server; tasks
    stay in the server's database and go on when they start again."""
    lines = []
    for part in parts(data_dir(settings.paths))[::-1]:
        pid = running_pid(part.pid_file, part.marker)
        if pid is None:
            lines.append(f"{part.name}: {_not_ours(part, settings.temporal.embedded_port) or 'not running'}")
            continue
        os.kill(pid, signal.SIGTERM)
        how = "stopped"
        wait = settings.worker.shutdown_grace_s + STOP_WAIT_S if part.worker else STOP_WAIT_S
        if not _gone(part.pid_file, part.marker, wait):
            os.kill(pid, signal.SIGKILL)
            how = "killed (it did not stop in time)"
        part.pid_file.unlink(missing_ok=True)
        lines.append(f"{part.name}: {how} (pid {pid})")
    return lines


def log_tails(settings: Settings, lines: int) -> list[str]:
    out = []
    for part in parts(data_dir(settings.paths)):
        out.append(f"==> {part.log} <==")
        out += _tail(part.log, lines) if part.log.is_file() else ["(no log yet)"]
    return out


def _not_ours(part: Part, port: int) -> str | None:
    """For a server this data directory has no pid of, one that answers on its port anyway."""
    if part.pid_file.name == SERVER_PID and port_open(EMBEDDED_HOST, port):
        return f"not started from this data directory, but one answers on {EMBEDDED_HOST}:{port} (stop it where it runs)"
    return None


def _gone(pid_file: Path, marker: str, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while running_pid(pid_file, marker) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _tail(path: Path, lines: int) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024 * max(1, lines // 200)))
            text = f.read().decode(errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
