"""Stopping a worker process: a stop never depends on being able to log (its output may go
to a pipe whose reader is gone, as with `python worker.py | tee` after Ctrl-C)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GRACE_S = 3


def _read_until_started(fd: int, workers: int, timeout_s: float = 90) -> bytes:
    """What the worker wrote until each of its ``workers`` processes said it started."""
    seen, deadline = b"", time.monotonic() + timeout_s
    while seen.count(b"worker started") < workers:
        assert time.monotonic() < deadline, f"the worker did not start: {seen.decode(errors='replace')}"
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            chunk = os.read(fd, 65536)
            assert chunk, f"the worker exited: {seen.decode(errors='replace')}"
            seen += chunk
    return seen


@pytest.mark.parametrize("processes", ["1", "2"])
def test_a_worker_writing_into_a_closed_pipe_exits_on_the_first_sigterm(client, tmp_path, processes):
    environ = {**os.environ, "TEMPORAL_ADDRESS": client.service_client.config.target_host,
               "TEMPORAL_NAMESPACE": "default", "AGENT_TASK_QUEUE": f"signals-{os.getpid()}-{processes}",
               "AGENT_SHUTDOWN_GRACE_S": str(GRACE_S)}
    reader, writer = os.pipe()
    proc = subprocess.Popen([sys.executable, "worker.py", "--processes", processes], cwd=ROOT, env=environ,
                            stdin=subprocess.DEVNULL, stdout=writer, stderr=writer)
    os.close(writer)
    try:
        _read_until_started(reader, int(processes))
        os.close(reader)  # `tee` ended by the same Ctrl-C: every later write is EPIPE
        reader = -1
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=GRACE_S + 10)
    finally:
        if reader >= 0:
            os.close(reader)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            pytest.fail("the worker ignored SIGTERM with its output pipe closed")
