"""The task workflow: seed 000's task loop, with Temporal doing the durability.

Deterministic: no I/O, no clocks but ``workflow.now()``. Every LLM call and
every tool runs as an activity; everything the loop appends to the context
is derived from their recorded results and from signals and updates, so
replaying the history rebuilds the same transcript.

People reach the loop through signals and updates: ``interject`` (a new
user message, which cancels the running LLM call or tool), ``approve`` /
``decide`` (a decision on a pending dangerous call) and ``stop``.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError

with workflow.unsafe.imports_passed_through():
    from activities.types import LLM_ACTIVITY, TOOL_ACTIVITY, LlmCallInput, PromptParams, ToolCallInput
    from providers.types import ToolCallRequest, TurnResult, Usage
    from tools.base import ToolResult as HandlerResult
    from workflows import policy
    from workflows.context import (
        AiMessage,
        Entry,
        StatusNotice,
        SystemReminder,
        ToolCall,
        ToolResult,
        Transcript,
        UserMessage,
    )
    from workflows.loop_detect import LOOP_REMINDER, LoopDetector
    from workflows.models import (
        TASK_WORKFLOW,
        ApprovalDecision,
        EventsPage,
        Interjection,
        PendingApproval,
        TaskInput,
        TaskOutcome,
        TaskState,
        TaskStatus,
    )
    from workflows.search_attributes import state_updates

INTERRUPTED_BY_USER = "[interrupted] The user sent a new message while this ran, so it was cancelled."
INTERRUPTED_BY_STOP = "[interrupted] The task was stopped while this ran."


@workflow.defn(name=TASK_WORKFLOW)
class AgentTaskWorkflow:
    @workflow.init
    def __init__(self, task: TaskInput) -> None:
        self._task = task
        self._transcript = Transcript()
        self._state = TaskState.INITIALIZING
        self._turn = 0
        self._no_tool_streak = 0
        self._usage = Usage()
        self._loops = LoopDetector()
        self._last_activity = ""
        self._inbox: list[Interjection] = []
        self._pending: PendingApproval | None = None
        self._decision: ApprovalDecision | None = None
        self._question: str | None = None
        self._stop_reason: str | None = None
        self._outcome: TaskOutcome | None = None
        self._prompt = PromptParams(workspace=task.workspace, date="")

    # ---- signals, updates, queries ---------------------------------------------

    @workflow.signal
    def stop(self, reason: str = "stopped by user") -> None:
        self._stop_reason = reason or "stopped by user"

    @workflow.signal
    def interject(self, message: Interjection) -> None:
        self._inbox.append(message)

    @workflow.signal
    def approve(self, decision: ApprovalDecision) -> None:
        if self._decision_problem(decision) is None:
            self._decision = decision
        else:
            workflow.logger.warning("ignored approval signal: %s", self._decision_problem(decision))

    @workflow.update
    def decide(self, decision: ApprovalDecision) -> PendingApproval:
        """Like ``approve``, but the caller learns whether it was accepted."""
        assert self._pending is not None
        self._decision = decision
        return self._pending

    @decide.validator
    def _validate_decide(self, decision: ApprovalDecision) -> None:
        problem = self._decision_problem(decision)
        if problem:
            raise ValueError(problem)

    @workflow.query
    def status(self) -> TaskStatus:
        return TaskStatus(
            state=self._state,
            turn=self._turn,
            last_activity=self._last_activity,
            usage=self._usage,
            entries=len(self._transcript.entries),
            model=self._task.model,
            error=self._outcome.error if self._outcome else None,
            final_text=self._outcome.final_text if self._outcome else None,
            pending_approval=self._pending,
            question=self._question,
            queued_interjections=len(self._inbox),
            approval=self._task.approval,
        )

    @workflow.query
    def events(self, after_seq: int = 0) -> EventsPage:
        entries = self._transcript.since(after_seq)
        return EventsPage(
            entries=entries,
            next_seq=after_seq + len(entries),
            status=self.status(),
            outcome=self._outcome,
        )

    # ---- the loop ----------------------------------------------------------------

    @workflow.run
    async def run(self, task: TaskInput) -> TaskOutcome:
        self._prompt = PromptParams(workspace=task.workspace, date=workflow.now().date().isoformat())
        self._append(UserMessage(text=task.instruction))
        while self._outcome is None:
            if self._preflight():
                break
            call = await self._think()
            if call is not None:
                await self._act(call)
        self._set_state(self._outcome.status)
        return self._outcome

    def _preflight(self) -> bool:
        if self._stop_reason is not None:
            self._fail(f"stopped: {self._stop_reason}", stopped=True)
            return True
        self._deliver_interjections()
        if self._turn >= self._task.max_iterations:
            self._fail(f"reached the maximum of {self._task.max_iterations} iterations")
            return True
        return False

    async def _think(self) -> ToolCall | None:
        self._turn += 1
        self._set_state(TaskState.THINKING, f"llm · {self._task.model} · turn {self._turn}")
        handle = workflow.start_activity(
            LLM_ACTIVITY,
            LlmCallInput(
                task_id=workflow.info().workflow_id,
                turn=self._turn,
                provider=self._task.provider,
                model=self._task.model,
                prompt=self._prompt,
                messages=self._transcript.llm_messages(),
                tool_names=self._task.tools or policy.DEFAULT_TOOLS,
                stream=self._task.stream,
            ),
            result_type=TurnResult,
            start_to_close_timeout=policy.LLM_TIMEOUT,
            heartbeat_timeout=policy.HEARTBEAT_TIMEOUT,
            retry_policy=policy.LLM_RETRY,
            summary=self._last_activity,
        )
        try:
            result = await self._interruptible(handle)
        except ActivityError as err:
            self._fail(f"LLM call failed: {policy.cause_message(err)}")
            return None
        if result is None:  # interrupted: the next iteration delivers the message or stops
            return None
        self._usage = self._usage + result.usage
        if not result.tool_calls:
            self._no_tool_call(result)
            return None
        self._no_tool_streak = 0
        entry = ToolCall(text=result.content, calls=result.tool_calls, thinking=result.thinking)
        self._append(entry)
        return entry

    def _no_tool_call(self, result: TurnResult) -> None:
        self._append(AiMessage(text=result.content, thinking=result.thinking))
        self._no_tool_streak += 1
        if self._no_tool_streak > self._task.max_no_tool_retries:
            self._fail(f"the model replied {self._no_tool_streak} times in a row without a tool call")
        else:
            self._append(SystemReminder(text=policy.NO_TOOL_CALL_REMINDER, reason="no_tool_call"))

    async def _act(self, entry: ToolCall) -> None:
        call, deferred = entry.calls[0], entry.calls[1:]
        looping = self._loops.record(call.name, call.arguments)
        result = await self._approved_execute(call)
        self._append(
            ToolResult(
                call_id=call.id,
                name=call.name,
                content=result.content,
                status=result.status,
                final_result=result.final_result,
                info=result.info,
                truncated=result.truncated,
                exit_code=result.exit_code,
            )
        )
        # No tool call is ever left without a result: the rest are answered as deferred.
        for extra in deferred:
            self._append(
                ToolResult(call_id=extra.id, name=extra.name, content=policy.DEFERRED_RESULT, status="deferred")
            )
        if looping:
            count = self._loops.recent.count(self._loops.recent[-1])
            self._append(SystemReminder(text=LOOP_REMINDER.format(name=call.name, count=count), reason="loop"))
        if result.status != "ok":
            return
        if result.final_result is not None:
            self._set_state(TaskState.FINALIZING)
            self._outcome = TaskOutcome(
                status=TaskState.DONE, final_text=result.final_result, turns=self._turn, usage=self._usage
            )
        elif result.ask is not None:
            await self._wait_for_reply(result.ask)

    async def _approved_execute(self, call: ToolCallRequest) -> HandlerResult:
        if self._task.approval.requires(call.danger):
            denial = await self._wait_for_approval(call)
            if denial is not None:
                return denial
        return await self._execute(call)

    async def _execute(self, call: ToolCallRequest) -> HandlerResult:
        self._set_state(TaskState.EXECUTING_TOOL, policy.tool_summary(call))
        handle = workflow.start_activity(
            TOOL_ACTIVITY,
            ToolCallInput(
                task_id=workflow.info().workflow_id, turn=self._turn, workspace=self._task.workspace, call=call
            ),
            result_type=HandlerResult,
            start_to_close_timeout=policy.TOOL_TIMEOUT,
            heartbeat_timeout=policy.HEARTBEAT_TIMEOUT,
            retry_policy=policy.TOOL_RETRY,
            summary=self._last_activity,
        )
        try:
            result = await self._interruptible(handle)
        except ActivityError as err:
            return HandlerResult(status="error", content=f"tool failed: {policy.cause_message(err)}")
        if result is None:
            text = INTERRUPTED_BY_STOP if self._stop_reason is not None else INTERRUPTED_BY_USER
            return HandlerResult(status="error", content=text)
        return result

    # ---- waiting for people ---------------------------------------------------------

    async def _wait_for_approval(self, call: ToolCallRequest) -> HandlerResult | None:
        """Block until a decision, a stop, an interjection or the timeout. None means approved."""
        self._pending = PendingApproval(
            call_id=call.id,
            tool=call.name,
            arguments=call.arguments,
            danger=call.danger or "unclassified",
            reason=call.danger_reason or f"approval mode is {self._task.approval.value}",
            turn=self._turn,
            requested_at=workflow.now(),
        )
        self._decision = None
        self._set_state(TaskState.WAITING_APPROVAL, f"waiting for approval: {policy.tool_summary(call)}")
        timeout = self._task.approval_timeout_s
        try:
            await workflow.wait_condition(
                lambda: self._decision is not None or self._stop_reason is not None or bool(self._inbox),
                timeout=timedelta(seconds=timeout) if timeout else None,
                timeout_summary="approval timeout",
            )
        except asyncio.TimeoutError:
            self._decision = ApprovalDecision(
                approved=False, reason=f"no decision within {timeout:g} s", decided_by="timeout"
            )
        decision, self._pending = self._decision, None
        if decision is None:  # a stop or an interjection supersedes the call
            why = "the task was stopped" if self._stop_reason is not None else "the user sent a new message instead"
            decision = ApprovalDecision(approved=False, reason=why, decided_by="superseded")
        verdict = "approved" if decision.approved else "denied"
        note = f"{call.name} call {verdict} by {decision.decided_by} at {workflow.now().isoformat()}"
        self._append(StatusNotice(text=f"{note}: {decision.reason}" if decision.reason else note))
        if decision.approved:
            return None
        reason = f" Reason: {decision.reason}" if decision.reason else ""
        return HandlerResult(
            status="error", content=f"[denied] This call was not run: {decision.decided_by} denied it.{reason}"
        )

    async def _wait_for_reply(self, question: str) -> None:
        self._question = question
        self._set_state(TaskState.WAITING_REPLY, f"waiting for a reply: {question[:80]}")
        await workflow.wait_condition(lambda: bool(self._inbox) or self._stop_reason is not None)
        self._question = None

    def _decision_problem(self, decision: ApprovalDecision) -> str | None:
        if self._pending is None:
            return "no tool call is waiting for approval"
        if decision.call_id is not None and decision.call_id != self._pending.call_id:
            return f"call {decision.call_id} is not pending (pending: {self._pending.call_id})"
        if self._decision is not None:
            return "the pending call has already been decided"
        return None

    def _deliver_interjections(self) -> None:
        while self._inbox:
            message = self._inbox.pop(0)
            self._append(UserMessage(text=message.text))

    async def _interruptible(self, handle: Any) -> Any:
        """Await an activity; cancel it on a stop or an interjection. None means interrupted."""
        interrupt = asyncio.ensure_future(
            workflow.wait_condition(lambda: self._stop_reason is not None or bool(self._inbox))
        )
        await workflow.wait([handle, interrupt], return_when=asyncio.FIRST_COMPLETED)
        if handle.done():
            interrupt.cancel()
            return handle.result()
        handle.cancel()
        try:
            await handle
        except (ActivityError, CancelledError, asyncio.CancelledError):
            pass
        return None

    # ---- helpers ----------------------------------------------------------------------

    def _append(self, entry: Entry) -> Entry:
        entry.turn = self._turn
        return self._transcript.append(entry)

    def _set_state(self, state: TaskState, activity: str | None = None) -> None:
        changed = state != self._state
        self._state = state
        if activity is not None:
            self._last_activity = activity
        details = f"{state.value.lower()}: {self._last_activity}" if self._last_activity else state.value.lower()
        workflow.set_current_details(details)
        if changed and self._task.search_attributes:
            workflow.upsert_search_attributes(state_updates(state, self._turn, self._task.model))

    def _fail(self, reason: str, *, stopped: bool = False) -> None:
        self._append(StatusNotice(text=f"task failed: {reason}"))
        self._outcome = TaskOutcome(
            status=TaskState.FAILED, turns=self._turn, usage=self._usage, stopped=stopped, error=reason
        )
