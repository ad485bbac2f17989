"""The ``plan`` tool: an explicit task list the model keeps (seed 004).

Each call replaces the whole plan. The handler only validates and describes
it; the workflow keeps the plan in its state from the recorded call, shows it
in ``status`` and ``watch``, and reminds the model of the current step when
the plan has not been touched for a few turns.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from tools.base import Danger, StrictArgs, ToolContext, ToolDefinition, ToolResult

DESCRIPTION = """\
Keep an explicit plan for a task with several steps. Each call replaces the whole plan.
- Items have an id, a short desc and a status: pending, in_progress or completed.
- At most one item is in_progress at a time; mark it completed as soon as it is done.
- Make a plan when the task needs three or more steps; skip it for simple tasks.
Example: {"items": [{"id": "1", "desc": "Read the config", "status": "completed"},
                    {"id": "2", "desc": "Fix the parser", "status": "in_progress"},
                    {"id": "3", "desc": "Run the tests", "status": "pending"}]}
"""


class PlanItem(BaseModel):
    model_config = {"extra": "forbid"}

    id: str = Field(min_length=1, max_length=40)
    desc: str = Field(min_length=1, max_length=300)
    status: Literal["pending", "in_progress", "completed"] = "pending"


class PlanArgs(StrictArgs):
    items: list[PlanItem] = Field(max_length=50, description="The whole plan, in order.")

    @model_validator(mode="after")
    def _one_in_progress_and_unique_ids(self) -> PlanArgs:
        if sum(item.status == "in_progress" for item in self.items) > 1:
            raise ValueError("at most one item may be in_progress")
        ids = [item.id for item in self.items]
        if len(ids) != len(set(ids)):
            raise ValueError("item ids must be unique")
        return self


def describe_plan(items: list[PlanItem]) -> str:
    marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
    done = sum(item.status == "completed" for item in items)
    lines = [f"Plan: {done}/{len(items)} completed."]
    lines += [f"{marks[item.status]} {item.id}. {item.desc}" for item in items]
    return "\n".join(lines)


async def update_plan(args: PlanArgs, ctx: ToolContext) -> ToolResult:
    return ToolResult(content=describe_plan(args.items), summary=f"plan: {len(args.items)} items")


TOOL = ToolDefinition(
    name="plan",
    description=DESCRIPTION,
    args_model=PlanArgs,
    handler=update_plan,
    danger=Danger.SAFE,
    compact_keys=(),
)
