"""The thinking step: assemble the context delta, call the model (failing over along the
chain), and turn the reply into a typed result for the loop.

A mixin of the task workflow (``workflows/task.py``): deterministic, no I/O. The call
carries only the entries the context store does not have yet (``workflows/sync.py``);
the LLM activity rebuilds the rest, compacts it to fit the window and reports what it did.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from contracts.activities import LLM_ACTIVITY, LlmCallInput, PromptParams
    from contracts.task import TaskState
    from contracts.toolset import shown_tools
    from core.entries import AiMessage, StatusNotice, SystemReminder, ToolCall
    from core.errors import ErrorKind
    from core.messages import ContextReport, TurnResult
    from workflows import metrics, policy
    from workflows.engine import LoopBase


@dataclass(frozen=True)
class Interrupted:
    """The model call was cut off by a stop or an interjection; the next pre-flight handles it."""


Thought = ToolCall | AiMessage | Interrupted  # a tool call to run, a reply without one, or nothing


class ThinkingMixin(LoopBase):
    async def _think(self) -> Thought:
        """One model call. Ends the task (``TaskEnded``) when the call fails for good, the
        spend passes the limit, or the model keeps replying without a tool call."""
        state = self.state
        state.turn += 1
        state.turns_this_run += 1
        metrics.turn()
        result = await self._call_with_failover()
        if result is None:
            return Interrupted()
        self._report_context(result.context)
        if result.notice:
            self._append(StatusNotice(reason="provider", text=result.notice))
        state.usage = state.usage + result.usage
        state.cost_usd += result.cost_usd
        state.cost_estimated = state.cost_estimated or result.cost_estimated
        self._check_limits(after_call=True)
        if not result.tool_calls:
            return self._no_tool_call(result)
        state.no_tool_streak = 0
        entry = ToolCall(text=result.content, calls=result.tool_calls, thinking=result.thinking)
        self._append(entry)
        self.sync.tool_wrote(entry, result.stored_digest)  # the LLM activity stored it: not sent back
        return entry

    def _check_limits(self, *, after_call: bool = False) -> None:
        """The task's limits, in one place: turns before a model call, spend at any time."""
        task, state = self.task, self.state
        if task.cost_limit_usd is not None and state.cost_usd > task.cost_limit_usd:
            raise self._fail(f"cost limit of ${task.cost_limit_usd:.4f} exceeded: ${state.cost_usd:.4f} spent", "cost_limit")
        if not after_call and state.turn >= task.max_iterations:
            raise self._fail(f"reached the maximum of {task.max_iterations} iterations", "max_iterations")

    async def _call_with_failover(self) -> TurnResult | None:
        full = overflowed = False
        while True:
            self._set_state(TaskState.THINKING, f"llm · {self._model.model} · turn {self.state.turn}")
            try:
                result = await self._call_llm(full=full)
            except ActivityError as err:
                if self._lost_affinity(err):
                    continue  # the warm worker is gone: the call never ran, any worker may take it
                if policy.error_type(err) == ErrorKind.CONTEXT_GAP and not full:
                    full = True  # the store lacks entries (a lost file, another host): resend in full
                    continue
                if policy.error_type(err) == ErrorKind.CONTEXT_OVERFLOW:
                    if overflowed:
                        raise self._fail(
                            f"the context does not fit the model's window even compacted to ~{self._window()} "
                            f"tokens ({self._model}): {policy.cause_message(err)}", "context_overflow") from None
                    overflowed = True
                    self._shrink_window(err)
                    continue
                if policy.retryable_failure(err) and self._fail_over(err):
                    continue
                if policy.retryable_failure(err) and await self._wait_for_provider(err):
                    if self._interrupted():
                        return None  # a stop or a message came while waiting: the loop takes it
                    continue
                raise self._fail(f"LLM call failed ({self._model}): {policy.cause_message(err)}", "provider") from None
            if self.state.provider_down_since is not None:
                down = (workflow.now() - self.state.provider_down_since).total_seconds()
                self.state.provider_down_since = None
                self._append(StatusNotice(reason="provider", text=f"{self._model} answered again after {down:.0f} s"))
            return result

    def _window(self) -> int:
        """The window compaction aims at: what the server said it has, else the task's."""
        return self.state.context_window or self.task.context_window

    def _shrink_window(self, err: ActivityError) -> None:
        """After a context overflow: aim at the window the server named (less a margin), or
        at half the current one, from now on; say so in the history."""
        current = self._window()
        stated = policy.stated_window(err)
        target = int(stated * 0.9) if stated and stated < current else current // 2
        self.state.context_window = max(1024, target)
        said = f"the server's window is {stated} tokens" if stated else "the server named no window"
        self._append(StatusNotice(
            reason="context_overflow",
            text=f"the request did not fit {self._model}'s context window ({said}): compacting to "
                 f"~{self.state.context_window} tokens and trying again",
        ))

    async def _wait_for_provider(self, err: ActivityError) -> bool:
        """The model and its whole failover chain are down: wait, visibly (WAITING_PROVIDER),
        and try again from the first model, until ``provider_wait_s`` has passed. False when
        the horizon is reached (the task then fails)."""
        state, task = self.state, self.task
        now = workflow.now()
        if state.provider_down_since is None:
            state.provider_down_since = now
            self._append(StatusNotice(
                reason="provider",
                text=f"{self._model} is not answering ({policy.cause_message(err)}): waiting up to "
                     f"{task.provider_wait_s:.0f} s for it, trying again every {task.provider_pause_s:.0f} s",
            ))
        waited = (now - state.provider_down_since).total_seconds()
        if waited >= task.provider_wait_s:
            return False
        pause = min(task.provider_pause_s, task.provider_wait_s - waited)
        at = (now + timedelta(seconds=pause)).strftime("%H:%M:%S")
        self._set_state(TaskState.WAITING_PROVIDER, f"{self._model} down for {waited:.0f} s: next attempt at {at} UTC")
        try:
            await workflow.wait_condition(self._interrupted, timeout=timedelta(seconds=pause),
                                          timeout_summary="waiting for the model's provider")
        except TimeoutError:
            pass
        state.model_index = 0  # the whole chain again, from the first model
        return True

    def _fail_over(self, err: ActivityError) -> bool:
        """Move to the next model of the chain after repeated retryable failures, visibly."""
        if self.state.model_index + 1 >= len(self.chain):
            return False
        previous = self._model
        self.state.model_index += 1
        self._append(StatusNotice(
            reason="failover",
            text=f"failing over from {previous} to {self._model} after {self.task.failover_after} "
            f"failed attempts: {policy.cause_message(err)}",
        ))
        return True

    async def _call_llm(self, *, full: bool) -> TurnResult | None:
        task, state = self.task, self.state
        total = self.transcript.total
        new, expect = self.sync.full(self.transcript) if full else self.sync.delta(self.transcript)
        # The worker the call is pinned to has the task's setup (context id, prompt inputs) from
        # an earlier call: sent only to any other worker, and with a full resend.
        setup = full or state.affinity_queue is None
        handle = workflow.start_activity(
            LLM_ACTIVITY,
            LlmCallInput(
                turn=state.turn,
                provider=self._model.provider,
                model=self._model.model,
                prompt=PromptParams(
                    workspace=task.workspace, date=state.prompt_date, minimal=task.minimal_prompt,
                    context=state.prompt_context,
                ) if setup else None,
                **LlmCallInput.naming(shown_tools(self.tool_names, state.browser),
                                      state.browser is not None and state.browser.open),
                stream=task.stream,
                thinking_budget=task.thinking_budget,
                context_id=state.context_id if setup else "",
                total=total,
                new_entries=new,
                expect=expect,
                context_window=self._window(),
                # A full resend also carries what stands in for the earlier runs' entries.
                prefix=state.prefix if full else None,
                base=self.transcript.base,
            ),
            result_type=TurnResult,
            start_to_close_timeout=policy.LLM_TIMEOUT,
            heartbeat_timeout=policy.HEARTBEAT_TIMEOUT,
            retry_policy=(
                policy.failover_retry(task.failover_after)
                if state.model_index + 1 < len(self.chain) else policy.failover_retry(task.llm_attempts)
            ),
            summary=state.last_activity,
            **self._placement(),
        )
        result = await self._interruptible(handle)
        if result is not None:
            self.sync.synced_to(total)
            # Recorded in the result, so replay decides the same. None: the call ran on the queue
            # it was pinned to (or on a worker with no queue of its own), so nothing changes.
            if result.worker_queue is not None:
                state.affinity_queue = result.worker_queue
        return result

    def _report_context(self, report: ContextReport | None) -> None:
        """Record compaction as an entry when it starts and then every 10 turns it adds."""
        if report is None or report.compacted_turns + report.dropped_turns == 0:
            return
        state = self.state
        changed = report.compacted_turns - state.last_report_turns
        if state.last_report_turns and changed < 10 and not report.dropped_turns:
            return
        state.last_report_turns = report.compacted_turns
        self._append(
            StatusNotice(
                reason="compaction",
                text=f"context compacted for the model: {report.compacted_turns} older turns summarised, "
                f"{report.dropped_turns} dropped, {report.truncated_results} results truncated, "
                f"~{report.tokens_before} -> ~{report.tokens_after} tokens",
            )
        )

    def _no_tool_call(self, result: TurnResult) -> AiMessage:
        reply = AiMessage(text=result.content, thinking=result.thinking)
        self._append(reply)
        self.sync.tool_wrote(reply, result.stored_digest)  # the LLM activity stored it: not sent back
        self.state.no_tool_streak += 1
        if self.state.no_tool_streak > self.task.max_no_tool_retries:
            raise self._fail(
                f"the model replied {self.state.no_tool_streak} times in a row without a tool call", "no_tool_call"
            )
        self._append(SystemReminder(text=policy.NO_TOOL_CALL_REMINDER, reason="no_tool_call"))
        return reply
