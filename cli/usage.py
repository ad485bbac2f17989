"""What each turn of a task used, read from its workflow history, for ``watch --json``.

The ``events`` query carries only the task's running totals; the history records every model
call's result (its usage and cost) and every sub-agent's outcome. ``HistoryUsage`` follows
the history once, long-polling for new events (``wait_new_event``), and across
continue-as-new, so a finished task and a running one are read the same way and nothing is
read twice.
"""

from __future__ import annotations

import asyncio
import contextlib

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.service import RPCError

from contracts.activities import LLM_ACTIVITY, LlmCallInput
from contracts.task import TaskOutcome
from core.messages import TurnResult, Usage
from workflows.policy import failed_outcome

WAIT_S = 5.0  # how long an event waits for the history to reach its turn before it goes out


class HistoryUsage:
    def __init__(self, client: Client, workflow_id: str) -> None:
        self.client, self.workflow_id = client, workflow_id
        self.usage: dict[int, Usage] = {}
        self.cost: dict[int, float] = {}
        self.latest = 0  # the latest turn whose model call the history has scheduled
        self.ended = False  # the history was read to the end of the task's last run
        self._changed = asyncio.Event()
        self._reader: asyncio.Task | None = None

    def of(self, turn: int) -> tuple[Usage, float]:
        return self.usage.get(turn, Usage()), self.cost.get(turn, 0.0)

    async def through(self, turn: int, timeout_s: float = WAIT_S) -> None:
        """Wait until everything of ``turn`` has been read: the next turn's model call was
        scheduled, or the task's history ended (at most ``timeout_s``)."""
        if self._reader is None:
            self._reader = asyncio.ensure_future(self._read())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not self.ended and self.latest <= turn and loop.time() < deadline:
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), deadline - loop.time())

    def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()

    async def _read(self) -> None:
        run_id: str | None = None
        try:
            while True:
                handle = self.client.get_workflow_handle(self.workflow_id, run_id=run_id)
                calls: dict[int, int] = {}  # scheduled event id of a model call -> its turn
                run_id = None
                async for event in handle.fetch_history_events(wait_new_event=True):
                    run_id = await self._take(event, calls) or run_id
                    self._changed.set()
                if run_id is None:
                    return
        except RPCError:
            return  # the task's history cannot be read: turns report what was read
        finally:
            self.ended = True
            self._changed.set()

    async def _take(self, event: HistoryEvent, calls: dict[int, int]) -> str | None:
        """Account for one event; the next run's id when the run continued as new."""
        decode = self.client.data_converter.decode
        match event.event_type:
            case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                attrs = event.activity_task_scheduled_event_attributes
                if attrs.activity_type.name == LLM_ACTIVITY:
                    (call,) = await decode(list(attrs.input.payloads), [LlmCallInput])
                    calls[event.event_id] = call.turn
                    self.latest = max(self.latest, call.turn)
            case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                attrs = event.activity_task_completed_event_attributes
                if attrs.scheduled_event_id in calls:
                    (result,) = await decode(list(attrs.result.payloads), [TurnResult])
                    self._add(calls[attrs.scheduled_event_id], result.usage, result.cost_usd)
            case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
                payloads = list(event.child_workflow_execution_completed_event_attributes.result.payloads)
                (outcome,) = await decode(payloads, [TaskOutcome])
                self._add(self.latest, outcome.usage, outcome.cost_usd)  # the turn that started it
            case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED:
                failure = event.child_workflow_execution_failed_event_attributes.failure
                error = await self.client.data_converter.decode_failure(failure)
                failed = failed_outcome(error) if isinstance(error, Exception) else None
                if failed is not None:
                    self._add(self.latest, failed.usage, failed.cost_usd)
            case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                return event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
        return None

    def _add(self, turn: int, usage: Usage, cost: float) -> None:
        self.usage[turn] = self.usage.get(turn, Usage()) + usage
        self.cost[turn] = self.cost.get(turn, 0.0) + cost
