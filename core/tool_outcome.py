"""What a tool call comes to: its danger level and the declarative outcome of running it.

A handler returns a ``ToolOutcome``; it never writes to the history or decides the next
step. The engine reads what the outcome declares (done with a final result, asking the
user, a new plan) and acts on it. Named apart from ``core.entries.ToolResult``, the
context entry the engine records for it.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel

from core.tool_args import PlanItem


class Danger(str, Enum):
    SAFE = "safe"
    MODERATE = "moderate"
    DANGEROUS = "dangerous"


class ToolOutcome(BaseModel):
    """The declarative outcome of one tool call.

    status: ``ok`` (done), ``error`` (failed; the model reads ``content`` and
    can recover), ``retry`` (the call was malformed; ``content`` is a hint).
    ``final_result`` set means the task is complete with that text.
    ``ask`` set means the model is asking the user and waits for a reply.
    ``plan`` set means the task's plan is now this list.
    """

    status: Literal["ok", "error", "retry"] = "ok"
    content: str
    final_result: str | None = None
    ask: str | None = None
    info: str | None = None  # a message to the user that does not end the task
    summary: str | None = None  # one-line compact summary, if the tool wants its own
    truncated: bool = False
    exit_code: int | None = None
    plan: list[PlanItem] | None = None
    # Set by the tool activity, not by handlers: the stored result entry's digest, and
    # for a large output the blob holding it in full (``content`` is then a preview).
    stored_digest: str | None = None
    blob: str | None = None
    full_chars: int | None = None
    # Set by the tool activity after an MCP call when the server's tool list is no longer the
    # one the task listed (it said tools/list_changed, or came back different): list again.
    tools_changed: bool = False
