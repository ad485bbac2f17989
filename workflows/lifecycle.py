"""A task's runs from start to end: the setup of its first run, continue-as-new carrying the
loop's state to the next run, and what the task's end leaves (the outcome, the session
record, the browser closed, its span).

A mixin of the task workflow (``workflows/task.py``): deterministic, no I/O.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.activities import (
        BROWSER_CLOSE_ACTIVITY,
        LOAD_SESSION_ACTIVITY,
        PROMPT_CONTEXT_ACTIVITY,
        RECORD_SESSION_ACTIVITY,
        PromptContextInput,
        SessionRecord,
    )
    from contracts.task import TaskInput, TaskOutcome, TaskState
    from core.compaction import CompactionPolicy, compact
    from core.entries import Entry, StatusNotice
    from core.tool_outcome import BrowserState
    from workflows import metrics, policy
    from workflows.search_attributes import session_update
    from workflows.telemetry import record_task_span

from workflows.mcp import McpMixin

PROMPT_SUMMARY = "prompt · memory, conventions, skills"


class LifecycleMixin(McpMixin):

    async def _initialize(self, task: TaskInput) -> None:
        """The first run's setup: the prompt context, the MCP tools, the session's history."""
        state = self.state
        metrics.task_started()
        state.context_id = task.context_id or str(workflow.uuid4())
        state.prompt_date = workflow.now().date().isoformat()
        if not task.minimal_prompt:
            # A local activity on this worker: a few file reads and a store write, recorded
            # as one marker event instead of an activity's three and a workflow task's three.
            state.prompt_context = await workflow.execute_local_activity(
                PROMPT_CONTEXT_ACTIVITY, PromptContextInput(workspace=task.workspace, session=task.session),
                result_type=str, start_to_close_timeout=policy.STORE_TIMEOUT, summary=PROMPT_SUMMARY,
            )
        if task.uses_mcp:
            await self._list_mcp_tools()
        if task.session:
            if task.search_attributes:
                workflow.upsert_search_attributes([session_update(task.session)])
            earlier: list[Entry] = await workflow.execute_activity(
                LOAD_SESSION_ACTIVITY,
                task.session,
                result_type=list[Entry],
                start_to_close_timeout=policy.STORE_TIMEOUT,
                summary=f"session · {task.session} · load history",
            )
            for entry in earlier:
                self._append(entry)
        self._append(await self._person_says(task.instruction, task.attachments))

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
        workflow.continue_as_new(self.task.model_copy(
            update={"carry": carry, "context_id": state.context_id, "attachments": []}))  # saved in the first run

    def _cancelled(self) -> None:
        """Cancelled from outside (the UI, `temporal workflow cancel`): what ran is cancelled by
        now; say so (the execution then ends Canceled)."""
        self.state.pending = self.state.question = None
        self._append(StatusNotice(text="task cancelled: a cancellation was requested", reason="cancelled"))
        self.state.outcome = self._end(TaskState.CANCELLED, error="cancelled: a cancellation was requested").outcome
        self._set_state(TaskState.CANCELLED)
        metrics.task_ended(TaskState.CANCELLED.value)

    async def _finish(self, outcome: TaskOutcome) -> TaskOutcome:
        """The task's end: its pages closed, its session recorded, its span; a failed task
        fails its workflow, with the outcome as the failure's details."""
        self.state.outcome = outcome
        self._set_state(outcome.status)
        metrics.task_ended(outcome.status.value)
        await self.reporter.ended(outcome, self.state)
        await self._close_browser()
        if self.task.session:
            await self._record_session(outcome)
        state = self.state
        record_task_span(  # the task's invoke_agent span; nothing when tracing is off or on replay
            model=self._model.model, provider=self._model.provider, status=outcome.status.value,
            turns=state.turn, input_tokens=state.usage.input_tokens, output_tokens=state.usage.output_tokens,
        )
        if outcome.status == TaskState.FAILED:
            raise ApplicationError(
                f"task failed: {outcome.error}", outcome, type=outcome.failure or "failed", non_retryable=True
            )
        return outcome

    async def _close_browser(self) -> None:
        """Close the finished task's pages on the worker that holds them (the one its calls
        were pinned to). Best effort: a worker that is gone took its pages along, and a
        worker's idle reaper closes whatever this misses."""
        if self.state.browser is None or not self.state.browser.open:
            return
        try:
            await workflow.execute_activity(
                BROWSER_CLOSE_ACTIVITY,
                workflow.info().workflow_id,
                start_to_close_timeout=policy.BROWSER_CLOSE_TIMEOUT,
                retry_policy=policy.NO_RETRY,
                summary="browser · close",
                **self._placement(),
            )
        except ActivityError:
            pass
        self.state.browser = BrowserState()

    async def _record_session(self, outcome: TaskOutcome) -> None:
        session = self.task.session
        assert session is not None
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
