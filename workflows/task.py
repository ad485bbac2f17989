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

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities.types import (
        LOAD_SESSION_ACTIVITY,
        PROMPT_CONTEXT_ACTIVITY,
        TOOL_ACTIVITY,
        PromptContextInput,
        PromptParams,
        ToolCallInput,
    )
    from providers.types import ToolCallRequest, Usage
    from tools.base import ToolResult as HandlerResult
    from temporal.tracing import record_task_span
    from tools.plan import PlanItem
    from workflows import policy
    from workflows.context import (
        Entry,
        StatusNotice,
        SystemReminder,
        ToolCall,
        ToolResult,
        Transcript,
        UserMessage,
        result_entry,
    )
    from workflows.loop_detect import LOOP_REMINDER, LoopDetector
    from workflows.models import (
        TASK_WORKFLOW,
        ApprovalDecision,
        EventsPage,
        Interjection,
        ModelRef,
        PendingApproval,
        TaskInput,
        TaskOutcome,
        TaskState,
        TaskStatus,
    )
    from workflows.search_attributes import session_update, state_updates
    from workflows.sync import ContextSync, SyncState

from workflows.continuation import ContinuationMixin
from workflows.delegation import DelegationMixin
from workflows.people import PeopleMixin
from workflows.thinking import ThinkingMixin

INTERRUPTED_BY_USER = "[interrupted] The user sent a new message while this ran, so it was cancelled."
INTERRUPTED_BY_STOP = "[interrupted] The task was stopped while this ran."


@workflow.defn(name=TASK_WORKFLOW)
class AgentTaskWorkflow(ThinkingMixin, PeopleMixin, DelegationMixin, ContinuationMixin):
    @workflow.init
    def __init__(self, task: TaskInput) -> None:
        self._task = task
        self._state = TaskState.INITIALIZING
        self._last_activity = ""
        self._pending: PendingApproval | None = None
        self._decision: ApprovalDecision | None = None
        self._question: str | None = None
        self._stop_reason: str | None = None
        self._outcome: TaskOutcome | None = None
        self._turns_this_run = 0
        self._chain = [ModelRef(provider=task.provider, model=task.model), *task.fallbacks]
        self._model_index = task.carry.model_index if task.carry else 0
        self._cost = task.carry.cost_usd if task.carry else 0.0
        self._tool_names = policy.visible_tools(
            task.tools, task.deny_tools, task.depth, task.max_depth, task.minimal_prompt
        )
        carry = task.carry
        if carry is None:
            self._context_id = task.context_id or ""
            self._transcript = Transcript()
            self._sync = ContextSync()
            self._turn = self._no_tool_streak = self._last_report_turns = 0
            self._usage = Usage()
            self._loops = LoopDetector()
            self._inbox: list[Interjection] = []
            self._runs = 1
            self._prompt = PromptParams(workspace=task.workspace, date="", minimal=task.minimal_prompt)
            self._plan: list[PlanItem] = []
            self._plan_turn = self._plan_reminded_turn = self._children = 0
        else:
            self._context_id = carry.context_id
            self._transcript = Transcript(carry.entries, base=carry.base)
            self._sync = ContextSync(SyncState(synced=carry.synced, tool_written=carry.tool_written))
            self._turn, self._no_tool_streak = carry.turn, carry.no_tool_streak
            self._last_report_turns = carry.last_report_turns
            self._usage = carry.usage
            self._loops = LoopDetector(carry.loop_recent)
            self._inbox = list(carry.inbox)
            self._runs = carry.runs + 1
            self._prompt = PromptParams(
                workspace=task.workspace, date=carry.prompt_date, minimal=task.minimal_prompt,
                context=carry.prompt_context,
            )
            self._plan = [PlanItem.model_validate(item) for item in carry.plan]
            self._plan_turn, self._plan_reminded_turn = carry.plan_turn, carry.plan_reminded_turn
            self._children = carry.children

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
            model=self._model.model,
            provider=self._model.provider,
            cost_usd=self._cost,
            error=self._outcome.error if self._outcome else None,
            final_text=self._outcome.final_text if self._outcome else None,
            pending_approval=self._pending,
            question=self._question,
            queued_interjections=len(self._inbox),
            approval=self._task.approval,
            run=self._runs,
            session=self._task.session,
            plan=[item.model_dump() for item in self._plan],
            depth=self._task.depth,
        )

    @workflow.query
    def events(self, after_seq: int = 0) -> EventsPage:
        entries = self._transcript.since(after_seq)
        return EventsPage(
            entries=entries,
            next_seq=max(after_seq, self._transcript.base) + len(entries),
            base=self._transcript.base,
            status=self.status(),
            outcome=self._outcome,
        )

    # ---- the loop ----------------------------------------------------------------

    @workflow.run
    async def run(self, task: TaskInput) -> TaskOutcome:
        if task.carry is None:
            await self._initialize(task)
        while self._outcome is None:
            if self._should_continue_as_new():
                await self._continue_as_new()
            if self._preflight():
                break
            call = await self._think()
            if call is not None:
                await self._act(call)
        self._set_state(self._outcome.status)
        if task.session:
            await self._record_session()
        record_task_span(  # the task's invoke_agent span; nothing when tracing is off or on replay
            model=self._model.model, provider=self._model.provider, status=self._outcome.status.value,
            turns=self._turn, input_tokens=self._usage.input_tokens, output_tokens=self._usage.output_tokens,
        )
        return self._outcome

    async def _initialize(self, task: TaskInput) -> None:
        self._context_id = task.context_id or str(workflow.uuid4())
        self._prompt = PromptParams(
            workspace=task.workspace, date=workflow.now().date().isoformat(), minimal=task.minimal_prompt
        )
        # patched(): tasks started before the prompt context existed replay without it.
        if not task.minimal_prompt and workflow.patched("prompt-context"):
            self._prompt.context = await workflow.execute_activity(
                PROMPT_CONTEXT_ACTIVITY,
                PromptContextInput(workspace=task.workspace, session=task.session),
                result_type=str,
                start_to_close_timeout=policy.STORE_TIMEOUT,
                summary="prompt · memory, conventions, skills",
            )
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
        self._append(UserMessage(text=task.instruction))

    def _preflight(self) -> bool:
        if self._stop_reason is not None:
            self._fail(f"stopped: {self._stop_reason}", stopped=True)
            return True
        self._deliver_interjections()
        self._remind_of_plan()
        if self._turn >= self._task.max_iterations:
            self._fail(f"reached the maximum of {self._task.max_iterations} iterations")
            return True
        return False

    async def _act(self, entry: ToolCall) -> None:
        call, deferred = entry.calls[0], entry.calls[1:]
        looping = self._loops.record(call.name, call.arguments)
        result = await self._approved_execute(call)
        entry = self._append(result_entry(call.id, call.name, result, seq=self._transcript.total, turn=self._turn))
        self._sync.tool_wrote(entry, result.stored_digest)
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
        if call.name == "plan":
            self._update_plan(call)
        if result.final_result is not None:
            self._set_state(TaskState.FINALIZING)
            self._outcome = TaskOutcome(
                status=TaskState.DONE, final_text=result.final_result, turns=self._turn, usage=self._usage,
                runs=self._runs, cost_usd=self._cost,
            )
        elif result.ask is not None:
            await self._wait_for_reply(result.ask)

    async def _approved_execute(self, call: ToolCallRequest) -> HandlerResult:
        if self._task.approval.requires(call.danger):
            denial = await self._wait_for_approval(call)
            if denial is not None:
                return denial
        if call.name == "spawn":
            return await self._spawn(call)
        return await self._execute(call)

    async def _execute(self, call: ToolCallRequest) -> HandlerResult:
        self._set_state(TaskState.EXECUTING_TOOL, policy.tool_summary(call))
        handle = workflow.start_activity(
            TOOL_ACTIVITY,
            ToolCallInput(
                task_id=workflow.info().workflow_id,
                turn=self._turn,
                workspace=self._task.workspace,
                call=call,
                context_id=self._context_id,
                result_seq=self._transcript.total,
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
            workflow.upsert_search_attributes(state_updates(state, self._turn, self._model.model, self._cost))

    def _fail(self, reason: str, *, stopped: bool = False) -> None:
        self._append(StatusNotice(text=f"task failed: {reason}"))
        self._outcome = TaskOutcome(
            status=TaskState.FAILED, turns=self._turn, usage=self._usage, stopped=stopped, error=reason,
            runs=self._runs, cost_usd=self._cost,
        )
