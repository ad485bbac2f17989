"""The task workflow's public models: its input, states, status view and outcome.

Shared by the workflow, the starter and the tests, so fields can be added
backwards-compatibly in one place.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field

from providers.types import Usage
from workflows.context import Entry

TASK_WORKFLOW = "AgentTask"
DEFAULT_TASK_QUEUE = "agent-tasks"


class TaskState(str, Enum):
    INITIALIZING = "INITIALIZING"
    THINKING = "THINKING"
    EXECUTING_TOOL = "EXECUTING_TOOL"
    FINALIZING = "FINALIZING"
    DONE = "DONE"
    FAILED = "FAILED"

    @property
    def finished(self) -> bool:
        return self in (TaskState.DONE, TaskState.FAILED)


class TaskInput(BaseModel):
    instruction: str
    workspace: str
    model: str
    provider: str = "openai"
    max_iterations: int = 50
    max_no_tool_retries: int = 3
    tools: list[str] | None = None  # None: the default tool set
    stream: bool = True


class TaskOutcome(BaseModel):
    status: TaskState
    final_text: str = ""
    turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    stopped: bool = False
    error: str | None = None


class TaskStatus(BaseModel):
    """What the ``status`` query returns."""

    state: TaskState
    turn: int
    last_activity: str = ""
    usage: Usage = Field(default_factory=Usage)
    entries: int = 0
    model: str = ""
    error: str | None = None
    final_text: str | None = None


class EventsPage(BaseModel):
    """What the ``events`` query returns: entries after a sequence number, and where the task is."""

    entries: list[Entry]
    next_seq: int
    status: TaskStatus
    outcome: TaskOutcome | None = None
