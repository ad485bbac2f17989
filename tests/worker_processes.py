"""Worker processes a test starts, as hosts run them (`python -m worker`, one process each).

What each writes goes to a file, and a failing test's report shows it (tests/conftest.py):
without it a worker that could not start, or died, fails its test as a bare timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TAIL_LINES = 40

# The workers started by the running test, with the file each writes to.
_spawned: list[tuple[subprocess.Popen, Path]] = []


def spawn_worker(
    target: str, task_queue: str, model_url: str, *, module: str = "worker", **env_overrides: str
) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(
        TEMPORAL_ADDRESS=target,
        TEMPORAL_NAMESPACE="default",
        AGENT_TASK_QUEUE=task_queue,
        OPENAI_BASE_URL=model_url,
        OPENAI_API_KEY="test-key",
    )
    env.update(env_overrides)
    # One process per worker here (worker.py's default is one per core): a "host" is one process.
    args = ["--processes", "1"] if module == "worker" else []
    fd, name = tempfile.mkstemp(prefix="worker-", suffix=".log")
    with os.fdopen(fd, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
    _spawned.append((proc, Path(name)))
    return proc


def spawned_report() -> str:
    """Each worker the test started: its pid, exit status and last lines."""
    parts = []
    for proc, log in _spawned:
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        status = "running" if proc.poll() is None else f"exited {proc.returncode}"
        parts.append(f"--- worker pid {proc.pid} ({status}), last {TAIL_LINES} lines:\n"
                     + "\n".join(lines[-TAIL_LINES:]))
    return "\n".join(parts)


def forget_spawned() -> None:
    """After a test: its workers' files go."""
    for _proc, log in _spawned:
        log.unlink(missing_ok=True)
    _spawned.clear()
