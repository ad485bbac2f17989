"""The task as a stream of JSON events (``watch ID --json``), one object per line, each with
a stable ``type`` in the spirit of seed 001: the table of types and fields is docs/cli.md's
(Events for programs). ``thread.started`` comes first and ``task.completed`` last.

A turn's usage is what its model call used (as the history records it), plus what a sub-agent it
started used; it comes from ``turn_usage``, so the mapper itself stays pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contracts.task import TaskOutcome, TaskStatus
from core.entries import AiMessage, Entry, StatusNotice, SystemReminder, ToolCall, ToolResult, UserMessage
from core.messages import Usage
from core.reply import split_reply

TurnUsage = Callable[[int], tuple[Usage, float]]  # turn -> (its usage, its cost in USD)


def no_usage(turn: int) -> tuple[Usage, float]:
    return Usage(), 0.0


class EventMapper:
    """Turns entries, status changes and the outcome into the JSON event stream."""

    def __init__(self, workflow_id: str, turn_usage: TurnUsage = no_usage) -> None:
        self.workflow_id = workflow_id
        self.turn_usage = turn_usage
        self.turn = 0
        self.started = False

    def begin(self) -> list[dict[str, Any]]:
        if self.started:
            return []
        self.started = True
        return [{"type": "thread.started", "thread_id": self.workflow_id}]

    def entry(self, entry: Entry) -> list[dict[str, Any]]:
        events = self._turn_boundary(entry.turn)
        item_id = f"item_{entry.seq}"
        match entry:
            case ToolCall():
                if entry.text.strip():
                    events.append(self._completed({"id": f"{item_id}_text", "type": "agent_message", "text": entry.text}))
                ran = split_reply(entry.calls, lambda c: c.parallel).running  # the reads run together
                for call in entry.calls:
                    events.append({
                        "type": "item.started",
                        "turn": self.turn,
                        "item": {
                            "id": call.id, "type": "tool_call", "tool": call.name,
                            "arguments": call.arguments if not call.parse_error else call.arguments_raw,
                            "deferred": call not in ran,
                        },
                    })
            case ToolResult():
                events.append(self._completed({
                    "id": entry.call_id, "type": "tool_result", "tool": entry.name, "status": entry.status,
                    "content": entry.content[:2000], "exit_code": entry.exit_code, "truncated": entry.truncated,
                }))
            case UserMessage():
                events.append(self._completed({"id": item_id, "type": "user_message", "text": entry.text}))
            case AiMessage():
                events.append(self._completed({"id": item_id, "type": "agent_message", "text": entry.text}))
            case SystemReminder():
                events.append(self._completed({"id": item_id, "type": "system_reminder", "reason": entry.reason, "text": entry.text}))
            case StatusNotice():
                events.append(self._completed({"id": item_id, "type": "status_notice", "reason": entry.reason, "text": entry.text}))
        return events

    def waiting(self, status: TaskStatus, workflow_id: str | None = None) -> list[dict[str, Any]]:
        """What the task, or its sub-agent ``workflow_id``, waits for."""
        who = {"workflow_id": workflow_id or self.workflow_id, "subagent": workflow_id not in (None, self.workflow_id)}
        if status.pending_approval is not None:
            p = status.pending_approval
            return [{"type": "approval.requested", **who, "call_id": p.call_id, "tool": p.tool,
                     "arguments": p.arguments, "danger": p.danger, "reason": p.reason}]
        if status.question is not None:
            return [{"type": "reply.requested", **who, "question": status.question}]
        return []

    def finish(self, outcome: TaskOutcome) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        if self.turn:
            if outcome.status.value != "DONE":
                events.append({"type": "turn.failed", "turn": self.turn, "error": outcome.error})
            else:
                events.append(self._turn_completed(self.turn))
        events.append({
            "type": "task.completed", "status": outcome.status.value, "final_text": outcome.final_text,
            "error": outcome.error, "stopped": outcome.stopped, "turns": outcome.turns,
            "usage": outcome.usage.model_dump(), "cost_usd": outcome.cost_usd,
        })
        return events

    def _turn_boundary(self, turn: int) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        while turn > self.turn:
            if self.turn:
                events.append(self._turn_completed(self.turn))
            self.turn += 1
            events.append({"type": "turn.started", "turn": self.turn})
        return events

    def _turn_completed(self, turn: int) -> dict[str, Any]:
        usage, cost = self.turn_usage(turn)
        return {"type": "turn.completed", "turn": turn, "usage": usage.model_dump(), "cost_usd": cost}

    def _completed(self, item: dict[str, Any]) -> dict[str, Any]:
        return {"type": "item.completed", "turn": self.turn, "item": item}
