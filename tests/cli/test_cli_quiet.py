"""What a person sees of a worker the CLI runs in its own process: progress, not the SDK's
log records (those go to worker.log in the data directory)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.cli.test_cli import cli

# A trial stopped at its time limit while its command runs: the activity is cancelled as the
# task ends, which the SDK logs (its Python side with a traceback, or its core, by timing).
SUITE = """
name = "cut-off"
[[cases]]
name = "slow-command"
instruction = "Run the slow job."
limits = { timeout_s = 3 }
graders = [{ kind = "state", equals = "FAILED" }]
script = [{ tool = "shell", args = { command = "sleep 30" } }]
"""
SDK_RECORDS = ("Completing activity as failed", "Activity not found on completion")


async def test_eval_demo_keeps_the_sdk_log_of_a_cut_off_activity_off_the_terminal(client, tmp_path):
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE)
    code, out, err = await cli(client, "eval", str(suite), "--demo", "--trials", "2")
    assert code == 0, err
    assert "slow-command    2/2" in out
    for noise in ("Traceback", "temporalio", "WARN", *SDK_RECORDS):
        assert noise not in out + err, out + err
    log = (Path(os.environ["AGENT_DATA_DIR"]) / "worker.log").read_text()
    assert any(record in log for record in SDK_RECORDS), log
