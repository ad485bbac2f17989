"""The loop's shared core: the typed state, the one append path, state changes and the end.

Every part of the task workflow (thinking, acting, people, delegation, continuation)
is a mixin over this base, so they share one ``LoopState`` and one set of helpers.
Deterministic: no I/O, no clocks but ``workflow.now()``.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError

with workflow.unsafe.imports_passed_through():
    from contracts.attachments import SAVE_ATTACHMENTS_ACTIVITY, Attachment, SaveAttachments, Saved, attachments_note
    from contracts.task import FailureKind, LoopState, ModelRef, TaskInput, TaskOutcome, TaskState
    from core.entries import Entry, StatusNotice, Transcript, UserMessage
    from core.loop_detect import LoopDetector
    from core.messages import ToolCallRequest
    from workflows import policy
    from workflows.chat_report import ChatReporter
    from workflows.search_attributes import current_values, searchable_values, state_updates, upsert_due
    from workflows.sync import ContextSync


class TaskEnded(Exception):
    """Raised where the task ends (done, failed, stopped, a limit); caught in ``run``."""

    def __init__(self, outcome: TaskOutcome) -> None:
        super().__init__(outcome.status.value)
        self.outcome = outcome


class LoopBase:
    """The state every part of the loop reads, and the helpers that change it."""

    task: TaskInput
    state: LoopState
    transcript: Transcript
    sync: ContextSync
    reporter: ChatReporter
    loops: LoopDetector
    chain: list[ModelRef]
    tool_names: list[str]
    _searchable: tuple | None = None  # the search attribute values last upserted by this run
    _searched_at: datetime | None = None  # when (workflow time), or when the run first looked
    _release: bool  # whether this run started on policy.RELEASE_PATCH (set by _enter_release)

    def _load(self, task: TaskInput) -> None:
        """The loop's state at the start of a run: fresh, or carried over by continue-as-new."""
        self.task = task
        carry = task.carry
        self.state = carry.model_copy(update={"runs": carry.runs + 1}) if carry else LoopState()
        # The helpers below work on the state's own lists, so there is nothing to copy back.
        self.transcript = Transcript(self.state.entries, base=self.state.base)
        self.sync = ContextSync(self.state)
        self.loops = LoopDetector(self.state.loop_recent)
        self.reporter = ChatReporter(task)
        self.chain = [ModelRef(provider=task.provider, model=task.model), *task.fallbacks]
        self.tool_names = task.offered_tools([t.name for t in self.state.mcp_tools])

    def _enter_release(self) -> None:
        """The run's first command: the marker of the release it starts on, which the changes
        since the previous release branch on (``_release``). A run started on the previous
        release (replaying) has that release's marker instead: matched, never recorded anew.
        The lifecycle is in docs/patches.md."""
        self._release = workflow.patched(policy.RELEASE_PATCH)
        if not self._release:
            workflow.deprecate_patch(policy.PREVIOUS_RELEASE)

    @property
    def _model(self) -> ModelRef:
        return self.chain[self.state.model_index]

    def _append(self, entry: Entry) -> Entry:
        entry.turn = self.state.turn
        return self.transcript.append(entry)

    async def _person_says(self, text: str, attachments: list[Attachment]) -> UserMessage:
        """A person's message as the model gets it: what they attached saved to the workspace
        first (one activity, only when something is attached), named in the text, and its
        images shown."""
        if not attachments:
            return UserMessage(text=text)
        saved: list[Saved] = await workflow.execute_activity(
            SAVE_ATTACHMENTS_ACTIVITY, SaveAttachments(workspace=self.task.workspace, attachments=attachments),
            result_type=list[Saved], start_to_close_timeout=policy.STORE_TIMEOUT,
            summary=f"attachments · save {len(attachments)}",
        )
        note = attachments_note(saved)
        return UserMessage(text=f"{text}\n{note}" if text else note, images=[s.image for s in saved if s.image])

    def _set_state(self, phase: TaskState, activity: str | None = None, call: ToolCallRequest | None = None) -> None:
        """Enter ``phase``; ``call`` is the tool call it runs or waits on, shown in full in the
        Temporal UI's current details (which cost no history event)."""
        self.state.phase = phase
        if activity is not None:
            self.state.last_activity = activity
        workflow.set_current_details(policy.current_details(phase, self.state.last_activity, call))
        self.reporter.phase(self.state, call)
        if self.task.search_attributes:
            self._upsert_paced(phase)

    def _upsert_paced(self, phase: TaskState) -> None:
        """Upsert the values that changed: the state and the model at once; the turns and the
        spend too when the task waits or ends (exact then), but while it works at most every
        ``REFRESH`` of workflow time. Values the starter set are not upserted again."""
        values = searchable_values(phase, self.state.turn, self._model.model, self.state.cost_usd)
        now = workflow.now()
        if self._searched_at is None:  # the run's first look: what it started with
            self._searchable, self._searched_at = current_values(workflow.info().typed_search_attributes), now
        last, since = self._searchable, now - (self._searched_at or now)
        if not upsert_due(last, values, since):
            return
        updates = state_updates(*values)
        self._searchable, self._searched_at = values, now
        workflow.upsert_search_attributes(
            updates if last is None else [u for u, old, new in zip(updates, last, values) if old != new])

    def _end(self, status: TaskState, **fields: Any) -> TaskEnded:
        """The task's outcome, as the exception that ends the loop."""
        s = self.state
        return TaskEnded(TaskOutcome(
            status=status, turns=s.turn, usage=s.usage, runs=s.runs, cost_usd=s.cost_usd,
            cost_estimated=s.cost_estimated, **fields,
        ))

    def _fail(self, reason: str, kind: FailureKind) -> TaskEnded:
        self._append(StatusNotice(text=f"task failed: {reason}"))
        return self._end(TaskState.FAILED, stopped=kind == "stopped", error=reason, failure=kind)

    def _placement(self) -> dict[str, Any]:
        """Where the next activity goes: the warm worker's own queue, if a model call has
        named one, with a bound on how long it may wait there; else the shared queue."""
        queue = self.state.affinity_queue
        if queue is None:
            return {}
        return {"task_queue": queue, "schedule_to_start_timeout": policy.AFFINITY_WAIT}

    def _lost_affinity(self, err: ActivityError) -> bool:
        """True (and the task unpinned) when a call timed out on the warm worker's queue."""
        if self.state.affinity_queue is None or not policy.never_started(err):
            return False
        self.state.affinity_queue = None
        return True

    @staticmethod
    async def _cancel_and_wait(handle: Any) -> None:
        """Cancel an activity or child and wait until it has stopped (so its end is recorded)."""
        handle.cancel()
        try:
            await handle
        except BaseException:  # noqa: BLE001 - cancelled, failed or done: all we wanted was the end
            pass

    def _interrupted(self) -> bool:
        return self.state.stop_reason is not None or bool(self.state.inbox)

    async def _done_or_interrupted(self, handle: Any) -> bool:
        """Wait until an activity or child is done (True) or the task is interrupted by a stop
        or an interjection (False), whichever comes first: the one race every call runs. The
        task cancelled meanwhile: so is what it runs. Issues no command of its own."""
        interrupt = asyncio.ensure_future(workflow.wait_condition(self._interrupted))
        try:
            await workflow.wait([handle, interrupt], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the task is being cancelled: so is what it runs
            interrupt.cancel()
            await self._cancel_and_wait(handle)
            raise
        interrupt.cancel()  # done, or already fired
        return handle.done()

    async def _interruptible(self, handle: Any) -> Any:
        """Await an activity; cancel it on a stop or an interjection. None means interrupted."""
        if await self._done_or_interrupted(handle):
            return handle.result()
        handle.cancel()
        try:
            await handle
        except (ActivityError, CancelledError, asyncio.CancelledError):
            pass
        return None
