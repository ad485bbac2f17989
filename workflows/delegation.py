"""The plan the model keeps, and sub-agents as child workflows.

A mixin of the task workflow (``workflows/task.py``): deterministic, no I/O.
"""

from __future__ import annotations

import asyncio

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from providers.types import ToolCallRequest
    from tools.base import ToolResult as HandlerResult
    from tools.base import schema_of
    from tools.plan import PlanArgs
    from tools.registry import coerce_args
    from tools.spawn import SpawnArgs
    from workflows import policy
    from workflows.context import SystemReminder
    from workflows.models import TASK_WORKFLOW, TaskOutcome, TaskState


class DelegationMixin:

    def _update_plan(self, call: ToolCallRequest) -> None:
        try:
            args = PlanArgs.model_validate(coerce_args(schema_of(PlanArgs), call.arguments))
        except ValidationError:
            return
        self._plan, self._plan_turn = args.items, self._turn

    def _remind_of_plan(self) -> None:
        """An event-driven reminder (seed 004): only when a plan is open and has gone stale."""
        if not self._plan or all(item.status == "completed" for item in self._plan):
            return
        since = self._turn - self._plan_turn
        if since >= policy.PLAN_STALE_TURNS and self._turn - self._plan_reminded_turn >= policy.PLAN_STALE_TURNS:
            self._plan_reminded_turn = self._turn
            self._append(SystemReminder(text=policy.plan_reminder(self._plan, since), reason="plan"))

    async def _spawn(self, call: ToolCallRequest) -> HandlerResult:
        """Run a sub-agent as a child workflow; its final summary is the result."""
        try:
            args = SpawnArgs.model_validate(coerce_args(schema_of(SpawnArgs), call.arguments))
        except ValidationError as err:
            return HandlerResult(status="retry", content=f"invalid spawn arguments: {err.errors()[0]['msg']}")
        if self._task.depth >= self._task.max_depth:
            return HandlerResult(status="error", content=f"sub-agents may not go deeper than {self._task.max_depth} levels")
        allowed = [n for n in (args.tools or self._tool_names) if n in self._tool_names]  # never more than ours
        self._children += 1
        child_id = f"{workflow.info().workflow_id}-sub{self._children}"
        child = self._task.model_copy(update={
            "instruction": args.task, "tools": allowed, "depth": self._task.depth + 1, "minimal_prompt": True,
            "session": None, "context_id": None, "carry": None,
        })
        self._set_state(TaskState.EXECUTING_TOOL, f"sub-agent · {policy.shorten(args.task)}")
        handle = await workflow.start_child_workflow(
            TASK_WORKFLOW, child, id=child_id, result_type=TaskOutcome,
            static_summary=f"sub-agent: {args.task[:200]}",
        )
        interrupt = asyncio.ensure_future(
            workflow.wait_condition(lambda: self._stop_reason is not None or bool(self._inbox))
        )
        await workflow.wait([handle, interrupt], return_when=asyncio.FIRST_COMPLETED)
        if not handle.done():  # stop and interjection reach the child too
            await handle.signal("stop", "the parent task was interrupted")
        interrupt.cancel()
        try:
            outcome: TaskOutcome = await handle
        except ChildWorkflowError as err:
            return HandlerResult(status="error", content=f"sub-agent {child_id} failed: {err.cause or err}")
        self._usage = self._usage + outcome.usage  # children's usage and cost add up into ours
        self._cost += outcome.cost_usd
        if outcome.status == TaskState.DONE:
            return HandlerResult(content=f"Sub-agent {child_id} finished in {outcome.turns} turns:\n{outcome.final_text}")
        return HandlerResult(
            status="error", content=f"Sub-agent {child_id} failed after {outcome.turns} turns: {outcome.error}"
        )
