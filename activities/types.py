"""Input and output models of the activities: the one contract between the
workflow and the boundary. Pure pydantic, safe to import in workflow code."""

from __future__ import annotations

from pydantic import BaseModel

from providers.types import ChatMessage, ToolCallRequest, TurnResult
from tools.base import ToolResult

LLM_ACTIVITY = "llm_call"
TOOL_ACTIVITY = "tool_call"


class PromptParams(BaseModel):
    """The dynamic part of the system prompt. The stable part lives in prompts/."""

    workspace: str
    date: str  # the task's start date (from workflow.now()), so the prompt is replay-stable


class LlmCallInput(BaseModel):
    task_id: str
    turn: int
    provider: str
    model: str
    prompt: PromptParams
    messages: list[ChatMessage]
    tool_names: list[str]
    stream: bool = True


class ToolCallInput(BaseModel):
    task_id: str
    turn: int
    workspace: str
    call: ToolCallRequest


__all__ = [
    "LLM_ACTIVITY",
    "TOOL_ACTIVITY",
    "LlmCallInput",
    "PromptParams",
    "ToolCallInput",
    "ToolResult",
    "TurnResult",
]
