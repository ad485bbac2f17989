"""A real Prometheus (Debian's) scrapes a worker process running tasks, and its query API
gives back what the tasks did: tasks ended, tokens, the model-call latency, the SDK's own
metrics, and the task that waits for an approval."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from contracts.task import TaskState
from fakes.scripted import ScriptedModelServer, tool
from tests.ports import free_port
from tests.workflows.harness import make_input, outcome_of
from workflows.task import AgentTaskWorkflow

ROOT = Path(__file__).resolve().parent.parent.parent
PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(
    PROMETHEUS is None and not os.environ.get("AGENT_TEST_REQUIRE_PROMETHEUS"),
    reason="Debian's prometheus is not installed: sudo apt-get install prometheus",
)



@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A Prometheus scraping a port the test's worker will serve, every second."""
    assert PROMETHEUS is not None, "AGENT_TEST_REQUIRE_PROMETHEUS is set: install Debian's prometheus"
    target, port = free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"scrape_configs: [{{job_name: worker, static_configs: [{{targets: ['127.0.0.1:{target}']}}]}}]\n"
    )
    process = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}", target
    finally:
        process.terminate()
        process.wait(timeout=30)


async def query(base: str, promql: str) -> float | None:
    async with httpx.AsyncClient() as http:
        try:
            body = (await http.get(f"{base}/api/v1/query", params={"query": promql})).json()
        except httpx.HTTPError:
            return None
    result = body.get("data", {}).get("result", [])
    return float(result[0]["value"][1]) if result else None


async def until(base: str, promql: str, expected: float, timeout_s: float = 90.0) -> float | None:
    """The query's value once it equals ``expected``, or the last value seen at the timeout."""
    value = None
    for _ in range(int(timeout_s * 2)):
        value = await query(base, promql)
        if value == expected:
            return value
        await asyncio.sleep(0.5)
    return value


async def test_prometheus_reads_back_what_the_worker_did(client, task_queue, workspace, tmp_path, prometheus):
    base, metrics_port = prometheus
    steps = [
        tool("file", action="write", path="a.txt", content="one"), tool("message", type="result", text="first"),
        tool("file", action="read", path="a.txt"), tool("message", type="result", text="second"),
        tool("shell", command="rm -rf build && git push --force origin main"),  # waits for a person
    ]
    with ScriptedModelServer(steps) as model:
        env = {
            **os.environ, "TEMPORAL_ADDRESS": client.service_client.config.target_host,
            "AGENT_TASK_QUEUE": task_queue, "AGENT_DATA_DIR": str(tmp_path / "data"),
            "OPENAI_BASE_URL": model.url, "AGENT_METRICS_PORT": str(metrics_port),
        }
        worker = subprocess.Popen([sys.executable, "worker.py", "--processes", "1"], cwd=ROOT, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            for number, text in ((1, "first"), (2, "second")):
                handle = await client.start_workflow(
                    AgentTaskWorkflow.run, make_input(workspace, f"task {number}", search_attributes=True),
                    id=f"metrics-{number}-{task_queue}", task_queue=task_queue)
                outcome = await outcome_of(handle)
                assert outcome.status == TaskState.DONE and outcome.final_text == text
            waiting = await client.start_workflow(
                AgentTaskWorkflow.run, make_input(workspace, "task 3", search_attributes=True),
                id=f"metrics-3-{task_queue}", task_queue=task_queue)
            assert await until(base, 'sum(agent_tasks_ended_total{state="DONE"})', 2) == 2
            assert await until(base, "sum(agent_tasks_started_total)", 3) == 3
            assert await until(base, "sum(agent_approvals_requested_total)", 1) == 1
            assert await until(base, "max(agent_approvals_waiting)", 1) == 1
            # Five model calls of 10 input and 5 output tokens each (the scripted usage).
            assert await until(base, "sum(agent_tokens_input_total)", 50) == 50
            assert await until(base, "sum(agent_tokens_output_total)", 25) == 25
            assert await until(base, "sum(agent_model_call_latency_seconds_count)", 5) == 5
            assert await until(base, 'sum(agent_tool_calls_total{tool="file",outcome="ok"})', 2) == 2
            # The SDK's own worker metrics come through the same endpoint.
            assert (await query(base, "sum(temporal_workflow_task_schedule_to_start_latency_count)") or 0) > 0
            assert await query(base, "count(temporal_sticky_cache_size)") is not None  # on the dashboard
            await waiting.signal("stop", "done measuring")
            assert await until(base, 'sum(agent_tasks_ended_total{state="FAILED"})', 1) == 1
        finally:
            worker.terminate()
            _, err = worker.communicate(timeout=60)
    assert b"Traceback" not in err


def _agent_metrics_in_source() -> set[str]:
    import re

    names = set()
    for path in ("workflows/metrics.py", "activities/metrics.py", "temporal/metrics.py"):
        names |= set(re.findall(r'"(agent_[a-z_]+)"', (ROOT / path).read_text()))
    return names


def test_every_agent_metric_is_on_the_dashboard_and_in_the_docs():
    import json
    import re

    dashboard = json.loads((ROOT / "docs/grafana-dashboard.json").read_text())
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
    on_dashboard = {re.sub(r"_(total|bucket|sum|count)$", "", n) for n in re.findall(r"agent_[a-z_]+", exprs)}
    docs = (ROOT / "docs/metrics.md").read_text()
    created = _agent_metrics_in_source()
    assert len(created) >= 12
    assert created == on_dashboard
    assert not [name for name in created if name not in docs]
