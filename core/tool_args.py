"""Argument models of the tools whose calls the engine itself reads: ``plan`` (the engine
keeps the plan and reminds the model of it) and ``spawn`` (a sub-agent runs as a child
workflow). Pure pydantic: the tools use them for validation, the workflow for state. Here too, the one
declaration of the tools the engine treats apart, read by the tools (``ToolDefinition.runs_in``,
``for_subagents``) and by the workflow (``contracts.toolset.offered_names``) alike."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

# A call of these runs as a child workflow (a sub-agent), never in the tool activity.
CHILD_WORKFLOW_TOOLS = ("spawn",)
# These only make sense with the full prompt: hidden from sub-agents, whose prompt is minimal.
NOT_FOR_SUBAGENTS = ("load_skill", "memory")


class StrictArgs(BaseModel):
    """Base for argument models: unknown fields are refused, so typos reach the model."""

    model_config = {"extra": "forbid"}


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


class SpawnArgs(StrictArgs):
    task: str = Field(min_length=1, max_length=20_000, description="The complete sub-task.")
    tools: list[str] | None = Field(default=None, description="Tools the sub-agent may use (default: yours).")
