"""The task workflow: seed 000's task loop, with Temporal doing the durability.

Deterministic: no I/O, no clocks but ``workflow.now()``. Every LLM call and
every tool runs as an activity; everything the loop appends to the context
is derived from their recorded results, so replaying the history rebuilds
the same transcript.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    from activities.types import (
        LLM_ACTIVITY,
        TOOL_ACTIVITY,
        LlmCallInput,
        PromptParams,
        ToolCallInput,
    )
    from providers.types import ToolCallRequest, TurnResult, Usage
    from tools.base import ToolResult as HandlerResult
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
        EventsPage,
        TaskInput,
        TaskOutcome,
        TaskState,
        TaskStatus,
    )

DEFAULT_TOOLS = ["message", "shell", "file"]

# A call lost with a dead worker is noticed by its missing heartbeat and retried.
HEARTBEAT_TIMEOUT = timedelta(seconds=10)
LLM_TIMEOUT = timedelta(minutes=10)
TOOL_TIMEOUT = timedelta(hours=1, minutes=5)  # the shell tool caps commands at one hour

# Temporal owns retries, so every attempt is visible in the history.
LLM_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=8,
)
TOOL_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=3)

NO_TOOL_CALL_REMINDER = (
    "Your last reply did not call a tool. Every reply must be exactly one tool call. "
    "To talk to the user use `message` with type `info`; when the task is complete call "
    "`message` with type `result` and the final answer."
)
DEFERRED_RESULT = (
    "[not executed] Only one tool call runs per turn and this one was deferred. "
    "Call it again in a later turn if it is still needed."
)


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
        self._stop_reason: str | None = None
        self._outcome: TaskOutcome | None = None

    # ---- signals and queries -------------------------------------------------

    @workflow.signal
    def stop(self, reason: str = "stopped by user") -> None:
        self._stop_reason = reason or "stopped by user"

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

    # ---- the loop ------------------------------------------------------------

    @workflow.run
    async def run(self, task: TaskInput) -> TaskOutcome:
        self._prompt = PromptParams(
            workspace=task.workspace, date=workflow.now().date().isoformat()
        )
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
                tool_names=self._task.tools or DEFAULT_TOOLS,
                stream=self._task.stream,
            ),
            result_type=TurnResult,
            start_to_close_timeout=LLM_TIMEOUT,
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=LLM_RETRY,
            summary=self._last_activity,
        )
        try:
            result = await self._interruptible(handle)
        except ActivityError as err:
            self._fail(f"LLM call failed: {_cause_message(err)}")
            return None
        if result is None:  # stopped while thinking
            return None
        self._usage = self._usage + result.usage
        if not result.tool_calls:
            return self._no_tool_call(result)
        self._no_tool_streak = 0
        entry = ToolCall(text=result.content, calls=result.tool_calls, thinking=result.thinking)
        self._append(entry)
        return entry

    def _no_tool_call(self, result: TurnResult) -> None:
        self._append(AiMessage(text=result.content, thinking=result.thinking))
        self._no_tool_streak += 1
        if self._no_tool_streak > self._task.max_no_tool_retries:
            self._fail(
                f"the model replied {self._no_tool_streak} times in a row without a tool call"
            )
            return None
        self._append(SystemReminder(text=NO_TOOL_CALL_REMINDER, reason="no_tool_call"))
        return None

    async def _act(self, entry: ToolCall) -> None:
        call, deferred = entry.calls[0], entry.calls[1:]
        looping = self._loops.record(call.name, call.arguments)
        result = await self._execute(call)
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
                ToolResult(call_id=extra.id, name=extra.name, content=DEFERRED_RESULT, status="deferred")
            )
        if looping:
            count = self._loops.recent.count(self._loops.recent[-1])
            self._append(
                SystemReminder(text=LOOP_REMINDER.format(name=call.name, count=count), reason="loop")
            )
        if result.final_result is not None and result.status == "ok":
            self._set_state(TaskState.FINALIZING)
            self._outcome = TaskOutcome(
                status=TaskState.DONE,
                final_text=result.final_result,
                turns=self._turn,
                usage=self._usage,
            )

    async def _execute(self, call: ToolCallRequest) -> HandlerResult:
        self._set_state(TaskState.EXECUTING_TOOL, _tool_summary(call))
        handle = workflow.start_activity(
            TOOL_ACTIVITY,
            ToolCallInput(
                task_id=workflow.info().workflow_id,
                turn=self._turn,
                workspace=self._task.workspace,
                call=call,
            ),
            result_type=HandlerResult,
            start_to_close_timeout=TOOL_TIMEOUT,
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=TOOL_RETRY,
            summary=self._last_activity,
        )
        try:
            result = await self._interruptible(handle)
        except ActivityError as err:
            return HandlerResult(status="error", content=f"tool failed: {_cause_message(err)}")
        if result is None:
            return HandlerResult(status="error", content="[interrupted] the task was stopped while this tool ran")
        return result

    async def _interruptible(self, handle: Any) -> Any:
        """Await an activity, cancelling it when a stop arrives. None means interrupted."""
        stop = asyncio.ensure_future(workflow.wait_condition(lambda: self._stop_reason is not None))
        await workflow.wait([handle, stop], return_when=asyncio.FIRST_COMPLETED)
        if handle.done():
            stop.cancel()
            return handle.result()
        handle.cancel()
        try:
            await handle
        except (ActivityError, CancelledError, asyncio.CancelledError):
            pass
        return None

    # ---- helpers ---------------------------------------------------------------

    def _append(self, entry: Entry) -> Entry:
        entry.turn = self._turn
        return self._transcript.append(entry)

    def _set_state(self, state: TaskState, activity: str | None = None) -> None:
        self._state = state
        if activity is not None:
            self._last_activity = activity
        details = f"{state.value.lower()}: {self._last_activity}" if self._last_activity else state.value.lower()
        workflow.set_current_details(details)

    def _fail(self, reason: str, *, stopped: bool = False) -> None:
        self._append(StatusNotice(text=f"task failed: {reason}"))
        self._outcome = TaskOutcome(
            status=TaskState.FAILED,
            turns=self._turn,
            usage=self._usage,
            stopped=stopped,
            error=reason,
        )


def _cause_message(err: ActivityError) -> str:
    cause = err.cause
    while isinstance(cause, ActivityError) and cause.cause is not None:
        cause = cause.cause
    if isinstance(cause, ApplicationError):
        return cause.message
    return str(cause or err)


def _tool_summary(call: ToolCallRequest) -> str:
    if call.name == "shell":
        detail = str(call.arguments.get("command", ""))
    else:
        detail = " ".join(str(v) for k, v in call.arguments.items() if k != "content")
    detail = " ".join(detail.split())
    if len(detail) > 60:
        detail = detail[:57] + "..."
    return f"tool · {call.name} · {detail}".rstrip(" ·")
