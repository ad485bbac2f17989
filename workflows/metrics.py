"""The task's own metrics, from workflow code: tasks started and ended, turns, approvals.

``workflow.metric_meter()`` records nothing while a workflow replays, so each event counts
once however often the task is replayed or moves between workers. The meter exports through
the worker's SDK runtime (Prometheus when ``--metrics-port`` is set, see
``temporal/metrics.py``); without an exporter these are no-ops. Names and labels:
docs/metrics.md.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow


def task_started() -> None:
    workflow.metric_meter().create_counter("agent_tasks_started", "tasks started").add(1)


def task_ended(state: str) -> None:
    workflow.metric_meter().create_counter("agent_tasks_ended", "tasks ended, by end state").add(1, {"state": state})


def turn() -> None:
    workflow.metric_meter().create_counter("agent_turns", "turns (model calls the loop made)").add(1)


def approval_requested(tool: str) -> None:
    workflow.metric_meter().create_counter(
        "agent_approvals_requested", "tool calls that waited for a person").add(1, {"tool": tool})


def approval_decided(tool: str, verdict: str, waited: timedelta) -> None:
    workflow.metric_meter().create_histogram_timedelta(
        "agent_approval_wait", "how long a call waited for its decision", "duration",
    ).record(waited, {"tool": tool, "verdict": verdict})
