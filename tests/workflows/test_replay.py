"""Replay recorded histories with the current workflow code: a determinism break fails here first."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from tests.workflows.replay_scenarios import HISTORIES, SCENARIOS, record_histories
from workflows.task import AgentTaskWorkflow

RECORDED = sorted(HISTORIES.glob("*.json"))


def replayer() -> Replayer:
    return Replayer(workflows=[AgentTaskWorkflow], data_converter=pydantic_data_converter)


def test_recorded_histories_are_present():
    assert {p.stem.split(".")[0] for p in RECORDED} >= set(SCENARIOS)


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
async def test_recorded_history_replays_deterministically(path: Path):
    history = WorkflowHistory.from_json(f"replay-{path.stem}", path.read_text())
    result = await replayer().replay_workflow(history)
    assert result.replay_failure is None


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_fresh_run_of_every_scenario_replays_deterministically(client, task_queue, workspace, name):
    bodies = await record_histories(client, f"{task_queue}-{name}", workspace, SCENARIOS[name])
    for body in bodies:
        result = await replayer().replay_workflow(WorkflowHistory.from_json(name, body))
        assert result.replay_failure is None
