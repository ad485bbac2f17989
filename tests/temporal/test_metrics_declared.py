"""An idle worker already exports every agent counter and the approvals gauge, at zero
(issue 40), and the histograms carry their unit in their names: scraped straight from the
worker's endpoint, no Prometheus needed."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import httpx

from activities import metrics as activity_metrics
from tests.ports import free_port
from tests.temporal.test_metrics import ROOT, _agent_metrics_in_source
from workflows import metrics as workflow_metrics


async def test_an_idle_worker_exports_every_agent_counter_at_zero(client, task_queue, tmp_path):
    port = free_port()
    env = {**os.environ, "TEMPORAL_ADDRESS": client.service_client.config.target_host,
           "AGENT_TASK_QUEUE": task_queue, "AGENT_DATA_DIR": str(tmp_path / "data"),
           "AGENT_METRICS_PORT": str(port), "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    worker = subprocess.Popen([sys.executable, "worker.py", "--processes", "1"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    expected = [f"{name}_total" for name, _ in workflow_metrics.COUNTERS + activity_metrics.COUNTERS]
    expected.append("agent_approvals_waiting")
    text = ""
    try:
        async with httpx.AsyncClient() as http:
            for _ in range(120):
                try:
                    text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
                except httpx.HTTPError:
                    text = ""
                if all(f"{name}{{" in text for name in expected):
                    break
                await asyncio.sleep(0.5)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    lines = [line for line in text.splitlines() if line.startswith("agent_")]
    assert all(any(line.startswith(f"{name}{{") and line.endswith(" 0") for line in lines) for name in expected), lines
    assert any(f'task_queue="{task_queue}"' in line for line in lines if line.startswith("agent_approvals_waiting"))


def test_every_agent_histogram_names_its_unit():
    histograms = {name for name in _agent_metrics_in_source() if "latency" in name or "wait" in name or "cost" in name}
    assert histograms >= {"agent_model_call_latency_seconds", "agent_model_cost_usd", "agent_approval_wait_seconds"}
    assert all(name.endswith(("_seconds", "_usd")) for name in histograms - {"agent_approvals_waiting"})
