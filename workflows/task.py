"""The task workflow: seed 000's task loop, with Temporal doing the durability.

Deterministic: no I/O, no clocks but ``workflow.now()``. Every LLM call and tool runs as an
activity; all the loop appends derives from their recorded results and from signals and
updates (``interject``, ``approve`` / ``decide``, ``stop``), so a replay rebuilds the same
transcript. The state is one ``LoopState`` (``contracts/task.py``); the parts of the loop are
mixins over ``workflows/engine.py``: thinking, people, delegation, lifecycle (a run's start,
continue-as-new and end), MCP, parallel reads and verification before finishing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from contracts.activities import CONTEXT_QUERY, TOOL_ACTIVITY, ContextPage, ToolCallInput
    from contracts.task import (
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
    from contracts.toolset import BROWSER_TOOLS
    from core.entries import SystemReminder, ToolCall, ToolResult, result_entry
    from core.loop_detect import LOOP_REMINDER, call_signature
    from core.messages import ToolCallRequest
    from core.reply import split_reply
    from core.tool_outcome import ToolOutcome
    from workflows import approvals, policy
    from workflows.engine import TaskEnded

from workflows.delegation import DelegationMixin
from workflows.lifecycle import LifecycleMixin
from workflows.parallel import ParallelMixin
from workflows.people import PeopleMixin
from workflows.thinking import ThinkingMixin
from workflows.verify import VerifyMixin


@workflow.defn(name=TASK_WORKFLOW)
class AgentTaskWorkflow(ThinkingMixin, PeopleMixin, DelegationMixin, LifecycleMixin, ParallelMixin, VerifyMixin):
    @workflow.init
    def __init__(self, task: TaskInput) -> None:
        self._load(task)

    # ---- signals, updates, queries ---------------------------------------------

    @workflow.signal(description=approvals.STOP_DESCRIPTION)
    def stop(self, reason: Any = "stopped by user") -> None:
        """Stop the task. Any payload stops it (a person sending ``{"reason": ...}``, a number
        or nothing from the Temporal UI means stop too): a string is the reason as given."""
        if isinstance(reason, dict) and isinstance(reason.get("reason"), str):
            reason = reason["reason"]
        if not isinstance(reason, str):
            reason = f"stopped by user ({reason!r})" if reason not in (None, {}, []) else ""
        self.state.stop_reason = reason.strip() or "stopped by user"

    @workflow.signal(description=approvals.INTERJECT_DESCRIPTION)
    def interject(self, message: approvals.RawInterjection) -> None:
        """Fire-and-forget: a malformed payload is logged with its cause and dropped."""
        parsed = approvals.parse_interjection(message)
        if isinstance(parsed, str):
            workflow.logger.warning("ignored interject signal: %s", parsed)
        else:
            self._receive(parsed)

    @workflow.update(description=approvals.INTERJECT_UPDATE_DESCRIPTION)
    def interject_checked(self, message: approvals.RawInterjection) -> None:
        parsed = approvals.parse_interjection(message)
        assert isinstance(parsed, Interjection)  # the validator checked it
        self._receive(parsed)

    @interject_checked.validator
    def _validate_interjection(self, message: approvals.RawInterjection) -> None:
        if problem := approvals.interjection_refused(message, self.state.outcome):
            workflow.logger.warning("refused interject update: %s", problem)
            raise approvals.Refusal(problem)

    # The decision's payload is taken raw and checked by approvals.parse_decision, so a
    # malformed one is refused in one line naming the fields (a typed parameter would fail
    # in the payload converter, with a traceback).
    @workflow.signal(description=approvals.APPROVE_DESCRIPTION)
    def approve(self, decision: Any) -> None:
        parsed = approvals.parse_decision(decision, digest=False)
        problem = parsed if isinstance(parsed, str) else self._decision_problem(parsed)
        if problem is None and isinstance(parsed, ApprovalDecision):
            self.state.decision = parsed
        else:
            workflow.logger.warning("ignored approval signal: %s", problem)

    @workflow.update(description=approvals.DECIDE_DESCRIPTION)
    def decide(self, decision: Any) -> PendingApproval:
        """Like ``approve``, but the caller learns whether it was accepted."""
        parsed = approvals.parse_decision(decision, digest=False)  # the validator checked it
        assert self.state.pending is not None and isinstance(parsed, ApprovalDecision)
        self.state.decision = parsed
        return self.state.pending

    @decide.validator
    def _validate_decide(self, decision: Any) -> None:
        parsed = approvals.parse_decision(decision)
        problem = parsed if isinstance(parsed, str) else self._decision_problem(parsed)
        if problem:
            raise approvals.Refusal(f"decision refused: {problem}")

    @workflow.query(description=approvals.STATUS_DESCRIPTION)
    def status(self) -> TaskStatus:
        state, outcome = self.state, self.state.outcome
        return TaskStatus(
            state=state.phase,
            turn=state.turn,
            last_activity=state.last_activity,
            usage=state.usage,
            entries=len(self.transcript.entries),
            model=self._model.model,
            provider=self._model.provider,
            cost_usd=state.cost_usd,
            cost_estimated=state.cost_estimated,
            error=outcome.error if outcome else None,
            final_text=outcome.final_text if outcome else None,
            pending_approval=state.pending,
            question=state.question,
            queued_interjections=len(state.inbox),
            approval=self.task.approval,
            run=state.runs,
            session=self.task.session,
            plan=[item.model_dump() for item in state.plan],
            depth=self.task.depth,
            allowed=[rule.text for rule in state.allowed],
            permissions=self.task.permissions,
        )

    @workflow.query(name=CONTEXT_QUERY, description=approvals.CONTEXT_DESCRIPTION)
    def model_context(self, after_seq: int) -> ContextPage:
        """For a worker whose store lacks entries: read from the workflow's state, nothing is
        written to the history."""
        base = self.transcript.base
        return ContextPage(
            base=base, prefix=self.state.prefix if after_seq < base else [], entries=self.transcript.since(after_seq)
        )

    @workflow.query(description=approvals.EVENTS_DESCRIPTION)
    def events(self, after_seq: int = 0) -> EventsPage:
        entries = self.transcript.since(after_seq)
        return EventsPage(
            entries=entries,
            next_seq=max(after_seq, self.transcript.base) + len(entries),
            base=self.transcript.base,
            status=self.status(),
            outcome=self.state.outcome,
        )

    # ---- the loop ----------------------------------------------------------------

    @workflow.run
    async def run(self, task: TaskInput) -> TaskOutcome:
        self._enter_release()  # first, so its marker leads every new run
        try:
            if task.carry is None:
                await self._initialize(task)
            while True:
                if self._should_continue_as_new():
                    await self._continue_as_new()
                await self._preflight()  # stop, interjections, plan reminder
                self._check_limits()  # turns and spend
                thought = await self._think()  # context delta -> model -> a tool call, or not
                if isinstance(thought, ToolCall):
                    await self._act(thought)  # approval -> tool -> result
        except TaskEnded as end:
            outcome = end.outcome
        except asyncio.CancelledError:
            self._cancelled()
            raise
        return await self._finish(outcome)

    async def _preflight(self) -> None:
        if self.state.stop_reason is not None:
            raise self._fail(f"stopped: {self.state.stop_reason}", "stopped")
        await self._deliver_interjections()
        self._remind_of_plan()

    async def _act(self, entry: ToolCall) -> None:
        """Run the reply's calls (``workflows/parallel.py``: its reads together, one other call
        alone after its approval) and answer the rest as deferred, every result in the order
        the model asked. Ends the task when the call declares a final result (after one
        verification, ``workflows/verify.py``); waits for the user when it asks a question."""
        reply = split_reply(entry.calls, self._joins)
        looping = [c for c in reply.running if self.loops.record(c.name, c.arguments)]
        results = self._record(reply.before, await self._run_together(reply.before))
        result = None
        if reply.single is not None:
            single = reply.single
            result = self._interrupted_outcome() if reply.before and self._interrupted() \
                else await self._approved_execute(single)
            self._record([single], [result])
            results.append(result)
        if reply.after:
            ran = [self._interrupted_outcome() for _ in reply.after] if self._interrupted() \
                else await self._run_together(reply.after)
            results += self._record(reply.after, ran)
        # No tool call is ever left without a result: the rest are answered as deferred.
        deferred = policy.DEFERRED_AFTER_READS if self._release else policy.DEFERRED_RESULT
        for extra in reply.deferred:
            self._append(ToolResult(call_id=extra.id, name=extra.name, content=deferred, status="deferred"))
        if any(r.tools_changed for r in results):  # an MCP server's tool list changed: offer what it has now
            await self._list_mcp_tools(again=True)
        if looping:
            last = looping[-1]
            count = self.loops.recent.count(call_signature(last.name, last.arguments))
            self._append(SystemReminder(text=LOOP_REMINDER.format(name=last.name, count=count), reason="loop"))
        for done in results:
            if done.status == "ok":
                self._keep_plan(done)
        if result is None or result.status != "ok":
            return
        if result.final_result is not None:
            if self.state.inbox:
                # A message from the user came in while the final answer was recorded (a local
                # call leaves no time to interrupt it): not done until the model has read it.
                return
            if self._verify_before_finishing():
                return
            self._set_state(TaskState.FINALIZING)
            raise self._end(TaskState.DONE, final_text=result.final_result)
        if result.ask is not None:
            await self._wait_for_reply(result.ask)

    def _record(self, calls: list[ToolCallRequest], results: list[ToolOutcome]) -> list[ToolOutcome]:
        """Append the calls' results in order (each at the seq its activity stored it at)."""
        for call, result in zip(calls, results, strict=True):
            recorded = self._append(result_entry(call.id, call.name, result, seq=self.transcript.total,
                                                 turn=self.state.turn))
            self.sync.tool_wrote(recorded, result.stored_digest)
            if result.browser is not None:  # the browser's tabs after the call: what a new worker reopens
                self.state.browser = result.browser
            self._note_change(call, result)
        return results

    async def _approved_execute(self, call: ToolCallRequest) -> ToolOutcome:
        refusal, approved = await self._permit(call)  # approved: the tool activity runs this exact call and no other
        if refusal is not None:
            return refusal
        if call.runs_in == "child_workflow":
            return await self._run_child(call)
        return await self._execute(call, approved)

    async def _execute(self, call: ToolCallRequest, approved: str | None = None, *,
                       seq: int | None = None, announce: bool = True) -> ToolOutcome:
        """Run one call; ``seq``: where its result goes (default: next); ``announce`` False
        when it runs in a group, which announced itself."""
        if announce:
            self._set_state(TaskState.EXECUTING_TOOL, policy.tool_summary(call), call)
        while True:
            try:
                result = await self._run_tool(call, approved, self.transcript.total if seq is None else seq)
                break
            except ActivityError as err:
                if self._lost_affinity(err):
                    continue  # never started on the gone worker: run it on any worker
                return ToolOutcome(status="error", content=f"tool failed: {policy.cause_message(err)}")
        return self._interrupted_outcome() if result is None else result

    async def _run_tool(self, call: ToolCallRequest, approved: str | None, seq: int) -> ToolOutcome | None:
        inp = ToolCallInput(
            turn=self.state.turn,
            workspace=self.task.workspace,
            # What the tool activity uses: the summary, the approval reason and what the call
            # declared are the LLM result's, already in the history.
            call=call.model_copy(update={"summary": None, "danger_reason": None, "read_only": False, "parallel": False}),
            context_id=self.state.context_id,
            result_seq=seq,
            approval=self.task.approval.value,
            approved=approved,
            network=self.task.network,
            mcp=self._mcp_call(call),
            browser=self.state.browser if call.name in BROWSER_TOOLS else None,
        )
        if call.runs_in == "local_activity":
            # A read the tool declared local (recorded with the call): the same tool activity,
            # run by this worker inside the workflow task, recorded as one marker.
            handle = workflow.start_local_activity(
                TOOL_ACTIVITY, inp, result_type=ToolOutcome, start_to_close_timeout=policy.LOCAL_TOOL_TIMEOUT,
                retry_policy=policy.TOOL_RETRY, summary=policy.tool_summary(call),
            )
        else:
            handle = workflow.start_activity(
                TOOL_ACTIVITY, inp, result_type=ToolOutcome, start_to_close_timeout=policy.TOOL_TIMEOUT,
                heartbeat_timeout=policy.HEARTBEAT_TIMEOUT, retry_policy=policy.TOOL_RETRY,
                summary=policy.tool_summary(call), **self._placement(),
            )
        return await self._interruptible(handle)
