"""Replay recorded histories with the current workflow code: a determinism break fails here first.

The committed histories are those of the runs this code still replays: recorded on the current
release or the previous one (docs/patches.md)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from temporal.plugin import AgentPlugin
from tests.workflows.replay_scenarios import HISTORIES, SCENARIOS, VERSION, record_histories
from workflows import policy
from workflows.task import AgentTaskWorkflow

RECORDED = sorted(HISTORIES.glob("*.json"))


def replayer() -> Replayer:
    return Replayer(workflows=[], plugins=[AgentPlugin.replaying(AgentTaskWorkflow)])  # as the worker runs it


def patch_ids(path: Path) -> list[str]:
    """The patch markers a recorded history holds, in order."""
    ids = []
    for event in json.loads(path.read_text())["events"]:
        marker = event.get("markerRecordedEventAttributes")
        if marker and marker["markerName"] == "core_patch":
            data = marker["details"]["patch-data"]["payloads"][0]["data"]
            ids.append(json.loads(base64.b64decode(data))["id"])
    return ids


def test_every_scenario_has_a_history_recorded_on_the_current_release():
    current = [p for p in RECORDED if p.name.split(".")[1] == VERSION]
    assert {p.name.split(".")[0] for p in current} >= set(SCENARIOS)
    assert all(patch_ids(p) == [policy.RELEASE_PATCH] for p in current)


def test_every_history_was_recorded_on_a_release_this_code_replays():
    """An older one goes together with the code it needs."""
    supported = [[policy.RELEASE_PATCH], [policy.PREVIOUS_RELEASE]]
    assert [p.name for p in RECORDED if patch_ids(p) not in supported] == []


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


async def test_a_run_from_before_verification_and_parallel_reads_replays_as_it_ran():
    """``full_loop.v7`` (release-2026-11-25) wrote a file and ran commands, had a reply of two
    calls answered one run and one deferred, and finished at its first result: the code that
    now runs reads together and reminds such a task to verify replays it unchanged. It goes
    with the v7 histories (docs/patches.md)."""
    path = HISTORIES / "full_loop.v7.run1.json"
    assert patch_ids(path) == [policy.PREVIOUS_RELEASE] == ["release-2026-11-25"]
    body = path.read_text()
    result = await replayer().replay_workflow(WorkflowHistory.from_json("before-verify", body))
    assert result.replay_failure is None
