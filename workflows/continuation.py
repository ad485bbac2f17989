"""Tasks of any length: continue-as-new carrying the loop's state, and sessions.

A mixin of the task workflow (``workflows/task.py``): deterministic, no I/O.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.types import RECORD_SESSION_ACTIVITY, SessionRecord
    from workflows import policy
    from workflows.models import Carry


class ContinuationMixin:

    def _should_continue_as_new(self) -> bool:
        if self._turns_this_run == 0 or self._stop_reason is not None:
            return False
        return (
            self._turns_this_run >= self._task.continue_as_new_after
            or workflow.info().is_continue_as_new_suggested()
        )

    async def _continue_as_new(self) -> None:
        await workflow.wait_condition(workflow.all_handlers_finished)
        sync = self._sync.state
        unsynced = self._transcript.since(sync.synced)
        carry = Carry(
            context_id=self._context_id,
            base=unsynced[0].seq if unsynced else self._transcript.total,
            entries=unsynced,
            synced=sync.synced,
            tool_written=sync.tool_written,
            turn=self._turn,
            no_tool_streak=self._no_tool_streak,
            usage=self._usage,
            loop_recent=self._loops.recent,
            inbox=self._inbox,
            runs=self._runs,
            prompt_date=self._prompt.date,
            last_report_turns=self._last_report_turns,
            prompt_context=self._prompt.context,
            plan=[item.model_dump() for item in self._plan],
            plan_turn=self._plan_turn,
            plan_reminded_turn=self._plan_reminded_turn,
            children=self._children,
            model_index=self._model_index,
            cost_usd=self._cost,
        )
        workflow.continue_as_new(self._task.model_copy(update={"carry": carry, "context_id": self._context_id}))

    async def _record_session(self) -> None:
        assert self._outcome is not None and self._task.session is not None
        await workflow.execute_activity(
            RECORD_SESSION_ACTIVITY,
            SessionRecord(
                session=self._task.session,
                context_id=self._context_id,
                workflow_id=workflow.info().workflow_id,
                status=self._outcome.status.value,
                final_text=self._outcome.final_text or (self._outcome.error or ""),
                total=self._transcript.total,
                new_entries=self._sync.delta(self._transcript)[0],
            ),
            start_to_close_timeout=policy.STORE_TIMEOUT,
            summary=f"session · {self._task.session} · record task",
        )
