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

# (name, description) of each counter, declared at zero when a worker starts (worker.py).
TASKS_STARTED = ("agent_tasks_started", "tasks started")
TASKS_ENDED = ("agent_tasks_ended", "tasks ended, by end state")
TURNS = ("agent_turns", "turns (model calls the loop made)")
APPROVALS_REQUESTED = ("agent_approvals_requested", "tool calls that waited for a person")
COUNTERS = (TASKS_STARTED, TASKS_ENDED, TURNS, APPROVALS_REQUESTED)

def task_started() -> None:
    workflow.metric_meter().create_counter(*TASKS_STARTED).add(1)


def task_ended(state: str) -> None:
    workflow.metric_meter().create_counter(*TASKS_ENDED).add(1, {"state": state})


def turn() -> None:
    workflow.metric_meter().create_counter(*TURNS).add(1)


def approval_requested(tool: str) -> None:
    workflow.metric_meter().create_counter(*APPROVALS_REQUESTED).add(1, {"tool": tool})


def approval_decided(tool: str, verdict: str, waited: timedelta) -> None:
    workflow.metric_meter().create_histogram_timedelta(
        "agent_approval_wait_seconds", "how long a call waited for its decision", "duration",
    ).record(waited, {"tool": tool, "verdict": verdict})
