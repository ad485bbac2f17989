"""The loop state is one typed model, and it is what continue-as-new carries."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.task import ApprovalDecision, LoopState, TaskInput, TaskState
from core.entries import UserMessage
from core.tool_args import PlanItem

HISTORIES = Path(__file__).resolve().parent.parent / "histories"


def _roundtrip(value: TaskInput) -> TaskInput:
    converter = pydantic_data_converter.payload_converter
    (payload,) = converter.to_payloads([value])
    (back,) = converter.from_payloads([payload], [TaskInput])
    return back


def test_every_carried_field_survives_continue_as_new_and_run_only_fields_do_not():
    state = LoopState(
        context_id="ctx", base=4, entries=[UserMessage(seq=4, text="hi")], synced=4, turn=7,
        plan=[PlanItem(id="1", desc="read", status="in_progress")], cost_usd=0.25, model_index=1,
    )
    state.phase = TaskState.EXECUTING_TOOL
    state.stop_reason = "x"
    state.decision = ApprovalDecision(approved=True)
    carried = _roundtrip(TaskInput(instruction="i", workspace="/w", model="m", carry=state)).carry
    assert carried is not None
    kept = {name for name, field in LoopState.model_fields.items() if not field.exclude}
    assert {n: getattr(carried, n) for n in kept} == {n: getattr(state, n) for n in kept}
    assert carried.phase == TaskState.INITIALIZING and carried.stop_reason is None and carried.decision is None


@pytest.mark.parametrize("name", sorted(p.name for p in HISTORIES.glob("continue_as_new.*.run[23].json")))
def test_carries_recorded_before_loop_state_still_validate(name):
    started = json.loads((HISTORIES / name).read_text())["events"][0]["workflowExecutionStartedEventAttributes"]
    raw = json.loads(base64.b64decode(started["input"]["payloads"][0]["data"]))
    task = TaskInput.model_validate(raw)
    assert task.carry is not None
    assert task.carry.turn == raw["carry"]["turn"] and len(task.carry.entries) == len(raw["carry"]["entries"])
