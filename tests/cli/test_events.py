"""The `watch --json` event mapper, without Temporal."""

from __future__ import annotations

from datetime import UTC, datetime

from cli.events import EventMapper
from contracts.task import PendingApproval, TaskOutcome, TaskState, TaskStatus
from core.entries import ToolCall, ToolResult, UserMessage
from core.messages import ToolCallRequest, Usage

PER_TURN = {1: (Usage(input_tokens=100, output_tokens=7), 0.01), 2: (Usage(input_tokens=30, output_tokens=3), 0.002)}


def call(turn: int, seq: int) -> ToolCall:
    return ToolCall(seq=seq, turn=turn, calls=[ToolCallRequest(id=f"c{turn}", name="shell", arguments={"command": "ls"})])


def test_turn_completed_carries_that_turns_usage_and_task_completed_the_totals():
    mapper = EventMapper("task-1", lambda turn: PER_TURN.get(turn, (Usage(), 0.0)))
    events = mapper.begin() + mapper.entry(UserMessage(seq=0, turn=0, text="go"))
    events += mapper.entry(call(1, 1)) + mapper.entry(ToolResult(seq=2, turn=1, call_id="c1", name="shell", content="ok"))
    events += mapper.entry(call(2, 3))
    total = Usage(input_tokens=130, output_tokens=10)
    events += mapper.finish(TaskOutcome(status=TaskState.DONE, turns=2, usage=total, cost_usd=0.012))
    completed = [e for e in events if e["type"] == "turn.completed"]
    assert [(e["turn"], e["usage"]["input_tokens"], e["usage"]["output_tokens"], e["cost_usd"]) for e in completed] == [
        (1, 100, 7, 0.01), (2, 30, 3, 0.002),
    ]
    assert events[-1]["type"] == "task.completed"
    assert events[-1]["usage"]["input_tokens"] == 130 and events[-1]["cost_usd"] == 0.012


def test_a_wait_names_the_workflow_that_waits_and_whether_it_is_a_subagent():
    pending = PendingApproval(call_id="c9", tool="shell", arguments={"command": "git push"}, danger="dangerous",
                              reason="pushes", turn=1, requested_at=datetime.now(UTC))
    status = TaskStatus(state=TaskState.WAITING_APPROVAL, turn=1, pending_approval=pending)
    mapper = EventMapper("task-1")
    (own,) = mapper.waiting(status)
    (child,) = mapper.waiting(status, "task-1-sub1")
    assert own["workflow_id"] == "task-1" and own["subagent"] is False
    assert child["type"] == "approval.requested" and child["workflow_id"] == "task-1-sub1" and child["subagent"] is True
    assert child["call_id"] == "c9" and child["arguments"] == {"command": "git push"}
    asked = TaskStatus(state=TaskState.WAITING_REPLY, turn=1, question="which branch?")
    assert mapper.waiting(asked, "task-1-sub1") == [
        {"type": "reply.requested", "workflow_id": "task-1-sub1", "subagent": True, "question": "which branch?"}
    ]
