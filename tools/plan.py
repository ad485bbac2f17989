"""The ``plan`` tool: an explicit task list the model keeps (seed 004).

Each call replaces the whole plan. The handler only validates and describes
it; the workflow keeps the plan in its state from the recorded call, shows it
in ``status`` and ``watch``, and reminds the model of the current step when
the plan has not been touched for a few turns.
"""

from __future__ import annotations

from core.tool_args import PlanArgs, PlanItem
from tools.base import Danger, ToolContext, ToolDefinition, ToolOutcome

DESCRIPTION = """\
Keep an explicit plan for a task with several steps. Each call replaces the whole plan.
- Items have an id, a short desc and a status: pending, in_progress or completed.
- At most one item is in_progress at a time; mark it completed as soon as it is done.
- Make a plan when the task needs three or more steps; skip it for simple tasks.
Example: {"items": [{"id": "1", "desc": "Read the config", "status": "completed"},
                    {"id": "2", "desc": "Fix the parser", "status": "in_progress"},
                    {"id": "3", "desc": "Run the tests", "status": "pending"}]}
"""


def describe_plan(items: list[PlanItem]) -> str:
    marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
    done = sum(item.status == "completed" for item in items)
    lines = [f"Plan: {done}/{len(items)} completed."]
    lines += [f"{marks[item.status]} {item.id}. {item.desc}" for item in items]
    return "\n".join(lines)


async def update_plan(args: PlanArgs, ctx: ToolContext) -> ToolOutcome:
    return ToolOutcome(content=describe_plan(args.items), summary=f"plan: {len(args.items)} items", plan=args.items)


TOOL = ToolDefinition(
    name="plan",
    description=DESCRIPTION,
    args_model=PlanArgs,
    handler=update_plan,
    danger=Danger.SAFE,
    idempotent=True,
    local=True,
    read_only=True,
    compact_keys=(),
)
