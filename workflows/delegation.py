"""The plan the model keeps, and sub-agents as child workflows.

A mixin of the task workflow (``workflows/task.py``): deterministic, no I/O.
"""

from __future__ import annotations

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from contracts.task import TASK_WORKFLOW, TaskOutcome, TaskState
    from core.coerce import coerce_args, schema_of
    from core.entries import SystemReminder
    from core.markdown import code_span
    from core.messages import ToolCallRequest
    from core.tool_args import SpawnArgs
    from core.tool_outcome import ToolOutcome
    from workflows import policy
    from workflows.engine import LoopBase


class DelegationMixin(LoopBase):

    def _keep_plan(self, result: ToolOutcome) -> None:
        """The plan a tool declared in its outcome becomes the task's plan."""
        if result.plan is not None:
            self.state.plan, self.state.plan_turn = result.plan, self.state.turn

    def _remind_of_plan(self) -> None:
        """An event-driven reminder (seed 004): only when a plan is open and has gone stale."""
        state = self.state
        if not state.plan or all(item.status == "completed" for item in state.plan):
            return
        since = state.turn - state.plan_turn
        if since >= policy.PLAN_STALE_TURNS and state.turn - state.plan_reminded_turn >= policy.PLAN_STALE_TURNS:
            state.plan_reminded_turn = state.turn
            self._append(SystemReminder(text=policy.plan_reminder(state.plan, since), reason="plan"))

    async def _run_child(self, call: ToolCallRequest) -> ToolOutcome:
        """Run a sub-agent as a child workflow; its final summary is the result."""
        try:
            args = SpawnArgs.model_validate(coerce_args(schema_of(SpawnArgs), call.arguments))
        except ValidationError as err:
            return ToolOutcome(status="retry", content=f"invalid {call.name} arguments: {err.errors()[0]['msg']}")
        task, state = self.task, self.state
        if task.depth >= task.max_depth:
            return ToolOutcome(status="error", content=f"sub-agents may not go deeper than {task.max_depth} levels")
        allowed = [n for n in (args.tools or self.tool_names) if n in self.tool_names]  # never more than ours
        state.children += 1
        child_id = f"{workflow.info().workflow_id}-sub{state.children}"
        child = task.model_copy(update={
            "instruction": args.task, "tools": allowed, "depth": task.depth + 1, "minimal_prompt": True,
            "session": None, "context_id": None, "carry": None,
        })
        self._set_state(TaskState.EXECUTING_TOOL, f"sub-agent · {policy.shorten(args.task)}")
        handle = await workflow.start_child_workflow(
            TASK_WORKFLOW, child, id=child_id, result_type=TaskOutcome,
            static_summary=code_span(f"sub-agent: {args.task[:200]}"),  # the UI renders Markdown
        )
        if not await self._done_or_interrupted(handle):  # stop and interjection reach the child too
            await handle.signal("stop", "the parent task was interrupted")
        try:
            outcome: TaskOutcome = await handle
        except ChildWorkflowError as err:
            failed = policy.failed_outcome(err)  # a failed child carries its outcome as details
            if failed is None:
                return ToolOutcome(status="error", content=f"sub-agent {child_id} failed: {err.cause or err}")
            outcome = failed
        state.usage = state.usage + outcome.usage  # children's usage and cost add up into ours
        state.cost_usd += outcome.cost_usd
        if outcome.status == TaskState.DONE:
            return ToolOutcome(content=f"Sub-agent {child_id} finished in {outcome.turns} turns:\n{outcome.final_text}")
        return ToolOutcome(
            status="error", content=f"Sub-agent {child_id} failed after {outcome.turns} turns: {outcome.error}"
        )
