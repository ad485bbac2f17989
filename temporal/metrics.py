"""Prometheus metrics of a worker: the SDK's own and the agent's, on one endpoint.

``metrics_runtime(port, host)`` is the SDK runtime whose Prometheus exporter serves
``http://HOST:PORT/metrics``: Temporal's worker metrics (``temporal_*``: workflow-task
latency, schedule-to-start, sticky cache) and whatever workflows and activities record
through their meters (``workflows/metrics.py``, ``activities/metrics.py``). A client
connected with this runtime hands it to its worker. ``approvals_waiting`` keeps one gauge
that no task can keep itself: how many tasks of the worker's queue wait for a person now,
counted through Temporal's visibility (as ``list --pending`` counts them). Names: docs/metrics.md.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

from temporalio.client import Client
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig
from temporalio.service import RPCError

from contracts.task import TaskState

WAITING_QUERY = f"AgentState = '{TaskState.WAITING_APPROVAL.value}' AND ExecutionStatus = 'Running'"


def waiting_query(queue: str) -> str:
    """The tasks of ``queue`` waiting for an approval now."""
    return f"{WAITING_QUERY} AND TaskQueue = '{queue}'"
GAUGE_EVERY_S = 10.0
APPROVALS_WAITING = ("agent_approvals_waiting", "tasks waiting for an approval now")


def metrics_runtime(port: int, host: str) -> Runtime:
    """A runtime exporting every metric for Prometheus on ``host:port`` (durations in seconds).
    ``host`` is the operator's (``AGENT_METRICS_HOST``, 127.0.0.1 unless told otherwise): the
    labels name models, tools and task queues, nothing to hand every network the host is on."""
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # an IPv6 address in brackets
    return Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(
        bind_address=address, counters_total_suffix=True, durations_as_seconds=True,
    )))


def declare(runtime: Runtime, counters: Iterable[tuple[str, str]], queue: str) -> None:
    """Export every agent counter, and the approvals gauge, at zero from the start, so an idle
    worker's scrape lists them all and a rate over a fresh worker is 0, not "no data".
    (Histograms appear with their first observation: the SDK's exporter shows no empty one.)"""
    meter = runtime.metric_meter
    for name, description in counters:
        meter.create_counter(name, description).add(0)
    meter.create_gauge(*APPROVALS_WAITING).set(0, {"task_queue": queue})


async def approvals_waiting(client: Client, runtime: Runtime, queue: str, every_s: float = GAUGE_EVERY_S) -> None:
    """Set ``agent_approvals_waiting`` (labelled with the task queue) from visibility until
    cancelled. A namespace without the search attributes, or a visibility call that fails,
    leaves the last value (one failed count is not zero tasks waiting)."""
    gauge = runtime.metric_meter.create_gauge(*APPROVALS_WAITING)
    while True:
        with contextlib.suppress(RPCError):
            gauge.set((await client.count_workflows(waiting_query(queue))).count, {"task_queue": queue})
        await asyncio.sleep(every_s)
