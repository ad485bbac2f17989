"""Tasks of any length: continue-as-new carrying the loop's state, and sessions.

A mixin of the task workflow (``workflows/task.py``): deterministic, no I/O.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.activities import RECORD_SESSION_ACTIVITY, SessionRecord
    from core.compaction import CompactionPolicy, compact
    from workflows import policy
    from workflows.engine import LoopBase


class ContinuationMixin(LoopBase):

    def _should_continue_as_new(self) -> bool:
        state = self.state
        if state.turns_this_run == 0 or state.stop_reason is not None:
            return False
        return state.turns_this_run >= self.task.continue_as_new_after or workflow.info().is_continue_as_new_suggested()

    async def _continue_as_new(self) -> None:
        await workflow.wait_condition(workflow.all_handlers_finished)
        state = self.state
        # The next run holds only what the context store may not have yet; the rest is there,
        # and in the history as the prefix: the model's view of it, bounded by the window.
        unsynced = self.transcript.since(state.synced)
        base = unsynced[0].seq if unsynced else self.transcript.total
        carried = [e for e in self.transcript.entries if e.seq < base]
        view = compact(state.prefix + carried, CompactionPolicy(context_window=self.task.context_window))
        carry = state.model_copy(update={"base": base, "entries": unsynced, "prefix": view.entries})
        workflow.continue_as_new(self.task.model_copy(update={"carry": carry, "context_id": state.context_id}))

    async def _record_session(self) -> None:
        outcome, session = self.state.outcome, self.task.session
        assert outcome is not None and session is not None
        await workflow.execute_activity(
            RECORD_SESSION_ACTIVITY,
            SessionRecord(
                session=session,
                context_id=self.state.context_id,
                workflow_id=workflow.info().workflow_id,
                status=outcome.status.value,
                final_text=outcome.final_text or (outcome.error or ""),
                total=self.transcript.total,
                new_entries=self.sync.delta(self.transcript)[0],
            ),
            start_to_close_timeout=policy.STORE_TIMEOUT,
            summary=f"session · {session} · record task",
        )
