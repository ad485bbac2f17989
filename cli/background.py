"""Someone always runs a task: on the embedded default, the Temporal dev server and a worker
run in the background, started by the first command that connects and said in one line.

Both are detached (they outlive the terminal) and keep a log and a pid file in the data
directory; ``starter.py server status|stop|logs`` shows and stops them. The worker serves
every task of the queue with the settings it started with, so a command whose settings
differ (a key exported since) restarts it: the old one drains its running activities and
exits. On a real cluster nothing is started here: workers are the operator's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

import worker
from cli.tasks import UserError
from cli.workers import RPC_TIMEOUT
from core.settings import Settings, TaskDefaults
from runtime.paths import data_dir
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

WORKER_LOG = "background-worker.log"
WORKER_PID = "background-worker.pid"
WORKER_SETTINGS = "background-worker.settings"  # a digest of the settings it started with
LOCK = "background.lock"
WORKER_SCRIPT = Path(worker.__file__).resolve()
SERVER_MARKER, WORKER_MARKER = "start-dev", WORKER_SCRIPT.name
START_WAIT_S = 60.0  # importing, checking the sandbox and the store, connecting: seconds
STOP_WAIT_S = 10.0  # after the worker's own shutdown grace
STOP_HOW = "python starter.py server stop"


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def connect(settings: Settings) -> Client:
    """A client of the cluster ``settings`` name; on the embedded default, with the dev server
    and a background worker running (started, and said in one line, when they were not)."""
    if not settings.temporal.embedded:
        return await temporal_client.connect(settings)
    directory = data_dir(settings.paths)
    with _locked(directory / LOCK):  # two commands at once start one pair, not two
        server = await ensure_embedded_server(settings.paths, port=settings.temporal.embedded_port,
                                           codec=codec_for(settings.codec) is not None)
        client = await temporal_client.connect(settings, start_embedded=False)
        started = await ensure_worker(client, settings, directory)
    if server:
        say(f"started the Temporal dev server and a worker in the background (logs: {directory / SERVER_LOG}, "
            f"{directory / WORKER_LOG}); stop them with: {STOP_HOW}")
    elif started:
        say(f"started {started} in the background (log: {directory / WORKER_LOG}); stop it with: {STOP_HOW}")
    return client


async def ensure_worker(client: Client, settings: Settings, directory: Path) -> str | None:
    """Start the background worker unless one runs with these settings; what was started
    ("a worker", or the restart and why), None when nothing was."""
    digest = settings_digest(settings)
    pid = running_pid(directory / WORKER_PID, WORKER_MARKER)
    said = "a worker"
    if pid is not None:
        if _read(directory / WORKER_SETTINGS) == digest:
            return None
        os.kill(pid, signal.SIGTERM)  # it drains its running activities and exits; the new one takes over
        said = f"a new worker (the one before, pid {pid}, had other settings)"
    command = [sys.executable, str(WORKER_SCRIPT), "--processes", "1", *as_arguments(settings.temporal)]
    proc = spawn_detached(command, directory / WORKER_LOG, directory / WORKER_PID, cwd=WORKER_SCRIPT.parent)
    (directory / WORKER_SETTINGS).write_text(digest)
    await _until_polling(client, worker.task_queue(settings.temporal), proc, directory / WORKER_LOG)
    return said


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


def settings_digest(settings: Settings) -> str:
    """What the worker would run with, hashed: every group but the CLI's task defaults."""
    plain = _plain(dataclasses.replace(settings, task=TaskDefaults()))
    return hashlib.sha256(json.dumps(plain, sort_keys=True).encode()).hexdigest()


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


# ---- server status | stop | logs ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Part:
    """One of the pair: its name, pid file, log, and what its command line holds."""

    name: str
    pid_file: str
    log: str
    marker: str


PARTS = (Part("Temporal dev server", SERVER_PID, SERVER_LOG, SERVER_MARKER),
         Part("codec server", CODEC_PID, CODEC_LOG, CODEC_MARKER),
         Part("worker", WORKER_PID, WORKER_LOG, WORKER_MARKER))


def status_lines(settings: Settings) -> list[str]:
    directory = data_dir(settings.paths)
    port = settings.temporal.embedded_port
    lines = []
    for part in PARTS:
        pid = running_pid(directory / part.pid_file, part.marker)
        state = f"running (pid {pid})" if pid is not None else _not_ours(part, port) or "not running"
        lines.append(f"{part.name}: {state} · log {directory / part.log}")
    lines.append(f"address {EMBEDDED_HOST}:{port} · UI {temporal_client.ui_base_url(settings.temporal)}")
    if not settings.temporal.embedded:
        lines.append(f"this command's Temporal is {settings.temporal.address}: tasks there are run by the "
                     "workers you start (python worker.py), not by these")
    return lines


def stop(settings: Settings) -> list[str]:
    """Stop the worker (it drains its running activities first), then the server; tasks
    stay in the server's database and go on when they start again."""
    directory = data_dir(settings.paths)
    waits = {WORKER_PID: settings.worker.shutdown_grace_s + STOP_WAIT_S, SERVER_PID: STOP_WAIT_S, CODEC_PID: STOP_WAIT_S}
    lines = []
    for part in PARTS[::-1]:
        pid = running_pid(directory / part.pid_file, part.marker)
        if pid is None:
            lines.append(f"{part.name}: {_not_ours(part, settings.temporal.embedded_port) or 'not running'}")
            continue
        os.kill(pid, signal.SIGTERM)
        how = "stopped"
        if not _gone(directory / part.pid_file, part.marker, waits[part.pid_file]):
            os.kill(pid, signal.SIGKILL)
            how = "killed (it did not stop in time)"
        (directory / part.pid_file).unlink(missing_ok=True)
        lines.append(f"{part.name}: {how} (pid {pid})")
    return lines


def log_tails(settings: Settings, lines: int) -> list[str]:
    directory = data_dir(settings.paths)
    out = []
    for part in PARTS:
        path = directory / part.log
        out.append(f"==> {path} <==")
        out += _tail(path, lines) if path.is_file() else ["(no log yet)"]
    return out


def _not_ours(part: Part, port: int) -> str | None:
    """For a server this data directory has no pid of, one that answers on its port anyway."""
    if part.pid_file == SERVER_PID and port_open(EMBEDDED_HOST, port):
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


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
