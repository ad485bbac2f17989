"""The task workflow: seed 000's task loop, with Temporal doing the durability.

Deterministic: no I/O, no clocks but ``workflow.now()``. Every LLM call and tool runs as an
activity; all the loop appends derives from their recorded results and from signals and
updates (``interject``, ``approve`` / ``decide``, ``stop``), so a replay rebuilds the same
transcript. The state is one ``LoopState`` (``contracts/task.py``); the parts of the loop are
mixins over ``workflows/engine.py``: thinking, people, delegation, lifecycle (a run's start,
continue-as-new and end), MCP.
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
    from core.loop_detect import LOOP_REMINDER
    from core.messages import ToolCallRequest
    from core.tool_outcome import ToolOutcome
    from workflows import approvals, policy
    from workflows.engine import TaskEnded

from workflows.delegation import DelegationMixin
from workflows.lifecycle import LifecycleMixin
from workflows.people import PeopleMixin
from workflows.thinking import ThinkingMixin

INTERRUPTED_BY_USER = "[interrupted] The user sent a new message while this ran, so it was cancelled."
INTERRUPTED_BY_STOP = "[interrupted] The task was stopped while this ran."


@workflow.defn(name=TASK_WORKFLOW)
class AgentTaskWorkflow(ThinkingMixin, PeopleMixin, DelegationMixin, LifecycleMixin):
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
    def interject(self, message: Interjection) -> None:
        self.state.inbox.append(message)

    # The decision's payload is taken raw and checked by approvals.parse_decision, so a
    # malformed one is refused in one line naming the fields (a typed parameter would fail
    # in the payload converter, with a traceback).
    @workflow.signal(description=approvals.APPROVE_DESCRIPTION)
    def approve(self, decision: Any) -> None:
        parsed = approvals.parse_decision(decision, digest=False)
        problem = parsed if isinstance(parsed, str) else self._decision_problem(parsed, signal=True)
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
        """Run the first call (after its approval); answer the rest as deferred. Ends the task
        when the call declares a final result; waits for the user when it asks a question."""
        call, deferred = entry.calls[0], entry.calls[1:]
        looping = self.loops.record(call.name, call.arguments)
        result = await self._approved_execute(call)
        recorded = self._append(result_entry(call.id, call.name, result, seq=self.transcript.total, turn=self.state.turn))
        self.sync.tool_wrote(recorded, result.stored_digest)
        if result.browser is not None:  # the browser's tabs after the call: what a new worker reopens
            self.state.browser = result.browser
        # No tool call is ever left without a result: the rest are answered as deferred.
        for extra in deferred:
            self._append(
                ToolResult(call_id=extra.id, name=extra.name, content=policy.DEFERRED_RESULT, status="deferred")
            )
        if result.tools_changed:  # an MCP server's tool list changed: offer what it has now
            await self._list_mcp_tools(again=True)
        if looping:
            count = self.loops.recent.count(self.loops.recent[-1])
            self._append(SystemReminder(text=LOOP_REMINDER.format(name=call.name, count=count), reason="loop"))
        if result.status != "ok":
            return
        self._keep_plan(result)
        if result.final_result is not None:
            if self.state.inbox:
                # A message from the user came in while the final answer was recorded (a local
                # call leaves no time to interrupt it): not done until the model has read it.
                return
            self._set_state(TaskState.FINALIZING)
            raise self._end(TaskState.DONE, final_text=result.final_result)
        if result.ask is not None:
            await self._wait_for_reply(result.ask)

    async def _approved_execute(self, call: ToolCallRequest) -> ToolOutcome:
        refusal, approved = await self._permit(call)  # approved: the tool activity runs this exact call and no other
        if refusal is not None:
            return refusal
        if call.runs_in == "child_workflow":
            return await self._run_child(call)
        return await self._execute(call, approved)

    async def _execute(self, call: ToolCallRequest, approved: str | None = None) -> ToolOutcome:
        self._set_state(TaskState.EXECUTING_TOOL, policy.tool_summary(call), call)
        while True:
            try:
                result = await self._run_tool(call, approved)
                break
            except ActivityError as err:
                if self._lost_affinity(err):
                    continue  # never started on the gone worker: run it on any worker
                return ToolOutcome(status="error", content=f"tool failed: {policy.cause_message(err)}")
        if result is None:
            text = INTERRUPTED_BY_STOP if self.state.stop_reason is not None else INTERRUPTED_BY_USER
            return ToolOutcome(status="error", content=text)
        return result

    async def _run_tool(self, call: ToolCallRequest, approved: str | None) -> ToolOutcome | None:
        inp = ToolCallInput(
            turn=self.state.turn,
            workspace=self.task.workspace,
            # What the tool activity uses: the summary and the approval reason are the LLM
            # result's, already in the history.
            call=call.model_copy(update={"summary": None, "danger_reason": None}),
            context_id=self.state.context_id,
            result_seq=self.transcript.total,
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
                retry_policy=policy.TOOL_RETRY, summary=self.state.last_activity,
            )
        else:
            handle = workflow.start_activity(
                TOOL_ACTIVITY, inp, result_type=ToolOutcome, start_to_close_timeout=policy.TOOL_TIMEOUT,
                heartbeat_timeout=policy.HEARTBEAT_TIMEOUT, retry_policy=policy.TOOL_RETRY,
                summary=self.state.last_activity, **self._placement(),
            )
        return await self._interruptible(handle)
