"""The worker process: it refuses to start, in one line, when its store cannot work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _worker(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "AGENT_DATA_DIR": str(tmp_path / "data"), "TEMPORAL_ADDRESS": "127.0.0.1:1", **env}
    return subprocess.run([sys.executable, "worker.py"], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60)


def test_a_worker_with_an_unusable_store_refuses_to_start_with_one_line(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    done = _worker(tmp_path, AGENT_CONTEXT_DB=str(blocker / "context.db"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "context store" in done.stderr and "Traceback" not in done.stderr


def test_a_worker_with_a_corrupt_store_moves_it_aside_and_goes_on(tmp_path):
    path = tmp_path / "context.db"
    path.write_bytes(b"garbage" * 1000)
    done = _worker(tmp_path, AGENT_CONTEXT_DB=str(path))
    # It gets past the store (and then stops at the unreachable Temporal address, one line too).
    assert "moved aside" in done.stderr and list(tmp_path.glob("context.db.corrupt-*"))
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_a_worker_whose_postgres_is_down_refuses_to_start_with_one_line(tmp_path):
    done = _worker(tmp_path, AGENT_CONTEXT_DB="postgresql://agent:hunter2@127.0.0.1:1/agent")
    assert done.returncode == 2
    line = done.stderr.strip()
    assert "\n" not in line and "cannot be used" in line and "hunter2" not in line and "Traceback" not in line


def test_a_worker_with_a_bad_setting_refuses_to_start_naming_the_variable(tmp_path):
    for name, value in (("AGENT_SHELL_MAX_PROCS", "lots"), ("AGENT_DENY_HOSTS", "10.0.0.0/33")):
        done = _worker(tmp_path, **{name: value})
        assert done.returncode == 2
        line = done.stderr.strip()
        assert "\n" not in line and name in line and "Traceback" not in line


def test_a_worker_with_a_bad_prices_or_models_file_refuses_to_start_naming_it(tmp_path):
    """Before issue 41 the worker got past its settings and failed building its activities, a
    traceback (here it stopped at the unreachable Temporal address first, not naming the file)."""
    (tmp_path / "prices.json").write_text('{"gpt-x": {"input": 1}}')  # no output price
    (tmp_path / "models.json").write_text("{not json")
    for name, value in (("AGENT_PRICES_FILE", "prices.json"), ("AGENT_MODELS_FILE", "models.json"),
                        ("AGENT_PRICES_FILE", "missing.json"), ("AGENT_STREAM", "maybe")):
        done = _worker(tmp_path, **{name: str(tmp_path / value) if value.endswith(".json") else value})
        assert done.returncode == 2
        line = done.stderr.strip()
        assert "\n" not in line and name in line and "Traceback" not in line
