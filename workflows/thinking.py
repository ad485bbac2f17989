"""The thinking step: one LLM call per turn, failover along the model chain, a reply
without a tool call, and a record of what compaction did.

A mixin of the task workflow (``workflows/task.py``): deterministic, no I/O. The call
carries only the entries the context store does not have yet (``workflows/sync.py``).
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities.types import CONTEXT_GAP, LLM_ACTIVITY, LlmCallInput
    from providers.types import ContextReport, TurnResult
    from workflows import policy
    from workflows.context import AiMessage, StatusNotice, SystemReminder, ToolCall
    from workflows.models import ModelRef, TaskState


class ThinkingMixin:
    async def _think(self) -> ToolCall | None:
        self._turn += 1
        self._turns_this_run += 1
        full = False
        while True:
            self._set_state(TaskState.THINKING, f"llm · {self._model.model} · turn {self._turn}")
            try:
                result = await self._call_llm(full=full)
                break
            except ActivityError as err:
                if policy.error_type(err) == CONTEXT_GAP and not full:
                    full = True  # the store lacks entries (a lost file, another host): resend in full
                    continue
                if policy.retryable_failure(err) and self._fail_over(err):
                    continue
                self._fail(f"LLM call failed ({self._model}): {policy.cause_message(err)}")
                return None
        if result is None:  # interrupted: the next iteration delivers the message or stops
            return None
        self._report_context(result.context)
        self._usage = self._usage + result.usage
        self._cost += result.cost_usd
        if self._task.cost_limit_usd is not None and self._cost > self._task.cost_limit_usd:
            self._fail(f"cost limit of ${self._task.cost_limit_usd:.4f} exceeded: ${self._cost:.4f} spent")
            return None
        if not result.tool_calls:
            self._no_tool_call(result)
            return None
        self._no_tool_streak = 0
        entry = ToolCall(text=result.content, calls=result.tool_calls, thinking=result.thinking)
        self._append(entry)
        return entry

    @property
    def _model(self) -> ModelRef:
        return self._chain[self._model_index]

    def _fail_over(self, err: ActivityError) -> bool:
        """Move to the next model of the chain after repeated retryable failures, visibly."""
        if self._model_index + 1 >= len(self._chain):
            return False
        previous = self._model
        self._model_index += 1
        self._append(StatusNotice(
            reason="failover",
            text=f"failing over from {previous} to {self._model} after {self._task.failover_after} "
            f"failed attempts: {policy.cause_message(err)}",
        ))
        return True

    async def _call_llm(self, *, full: bool) -> TurnResult | None:
        total = self._transcript.total
        new, expect = self._sync.full(self._transcript) if full else self._sync.delta(self._transcript)
        handle = workflow.start_activity(
            LLM_ACTIVITY,
            LlmCallInput(
                task_id=workflow.info().workflow_id,
                turn=self._turn,
                provider=self._model.provider,
                model=self._model.model,
                prompt=self._prompt,
                tool_names=self._tool_names,
                stream=self._task.stream,
                context_id=self._context_id,
                total=total,
                new_entries=new,
                expect=expect,
                context_window=self._task.context_window,
            ),
            result_type=TurnResult,
            start_to_close_timeout=policy.LLM_TIMEOUT,
            heartbeat_timeout=policy.HEARTBEAT_TIMEOUT,
            retry_policy=(
                policy.failover_retry(self._task.failover_after)
                if self._model_index + 1 < len(self._chain) else policy.LLM_RETRY
            ),
            summary=self._last_activity,
        )
        result = await self._interruptible(handle)
        if result is not None:
            self._sync.synced_to(total)
        return result

    def _report_context(self, report: ContextReport | None) -> None:
        """Record compaction as an entry when it starts and then every 10 turns it adds."""
        if report is None or report.compacted_turns + report.dropped_turns == 0:
            return
        changed = report.compacted_turns - self._last_report_turns
        if self._last_report_turns and changed < 10 and not report.dropped_turns:
            return
        self._last_report_turns = report.compacted_turns
        self._append(
            StatusNotice(
                reason="compaction",
                text=f"context compacted for the model: {report.compacted_turns} older turns summarised, "
                f"{report.dropped_turns} dropped, {report.truncated_results} results truncated, "
                f"~{report.tokens_before} -> ~{report.tokens_after} tokens",
            )
        )

    def _no_tool_call(self, result: TurnResult) -> None:
        self._append(AiMessage(text=result.content, thinking=result.thinking))
        self._no_tool_streak += 1
        if self._no_tool_streak > self._task.max_no_tool_retries:
            self._fail(f"the model replied {self._no_tool_streak} times in a row without a tool call")
        else:
            self._append(SystemReminder(text=policy.NO_TOOL_CALL_REMINDER, reason="no_tool_call"))
