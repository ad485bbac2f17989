"""Input and output models of the activities: the one contract between the
workflow and the boundary. Pure pydantic, safe to import in workflow code."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from contracts.mcp import McpCall
from contracts.toolset import default_shown
from core.entries import Entry
from core.lean import omitted, omitted_empty
from core.messages import ToolCallRequest, TurnResult
from core.tool_outcome import BrowserState, ToolOutcome

LLM_ACTIVITY = "llm_call"
TOOL_ACTIVITY = "tool_call"
PROMPT_CONTEXT_ACTIVITY = "prompt_context"
LOAD_SESSION_ACTIVITY = "session_load"
RECORD_SESSION_ACTIVITY = "session_record"
# A local activity: its input (a person's message, perhaps with a secret in clear) is not
# recorded in the history, only its redacted result.
REDACT_ACTIVITY = "redact_text"
# Closes a finished task's browser pages on the worker that holds them (best effort: a
# worker's idle reaper closes what this misses).
BROWSER_CLOSE_ACTIVITY = "browser_close"
CONTEXT_QUERY = "model_context"  # the workflow query a worker repairs its store from


class LiveText(BaseModel):
    """The LLM activity's heartbeat details while the model streams: the text so far, as its
    tail from ``offset``. Watchers on any host read it from the server's view of the pending
    activity (``describe``), so live text costs no history event."""

    turn: int
    attempt: int
    offset: int = 0
    text: str = ""


class ToolProgress(BaseModel):
    """The tool activity's heartbeat details: the call has started (so a retry of the same
    activity knows it may have partly run), the tail of its output so far, and, once it ran
    to the end, its result until the store has it (a store down at that moment loses nothing)."""

    started: bool = True
    output: str = ""
    note: str = ""
    finished: ToolOutcome | None = None


class ContextPage(BaseModel):
    """What the ``model_context`` query returns: the run's entries from a seq on, and the
    prefix that stands in for earlier runs' entries when the seq is below the run's base."""

    base: int
    prefix: list[Entry] = []
    entries: list[Entry] = []


class PromptParams(BaseModel):
    """The dynamic part of the system prompt. The stable part lives in prompts/."""

    workspace: str
    date: str  # the task's start date (from workflow.now()), so the prompt is replay-stable
    minimal: bool = omitted(False)  # sub-agents: no memory, skills or project conventions
    context: str | None = omitted()  # blob digest of the prompt context loaded at task start


class LlmCallInput(BaseModel):
    """One LLM call. The context travels as a delta: the activity rebuilds entries
    0..total-1 from the context store after writing ``new_entries`` to it, and checks
    the entries tool activities wrote against ``expect`` (seq -> digest).

    Sent every turn, so what the activity can know otherwise is left out: ``task_id`` is the
    workflow's id (``activity.info()``; set for calls scheduled by earlier code), and
    ``tool_names`` is empty for the default tool list (``tools()`` gives it)."""

    task_id: str = omitted("")
    turn: int
    provider: str = omitted("openai")
    model: str
    # The prompt's inputs and (below) the context id: sent with the first call, a full resend
    # and any call not pinned to the worker that served the last one; left out, they are as
    # that worker has them for this task (if it does not, it reports a gap and the workflow
    # resends in full).
    prompt: PromptParams | None = omitted()
    tool_names: list[str] = omitted_empty(list)
    page_open: bool = omitted(False)  # with the default list: a browser page is open (page tools shown)
    stream: bool = omitted(True)
    context_id: str = omitted("")
    total: int
    new_entries: list[Entry] = omitted_empty(list)
    expect: dict[int, str] = omitted_empty(dict)
    context_window: int = omitted(128_000)
    # Sent only with a full resend (after the store reported a gap): the loop state's prefix,
    # the model's view of every entry before ``base``, which then stands in for them.
    prefix: list[Entry] | None = omitted()
    base: int = omitted(0)
    thinking_budget: int | None = omitted()  # extended thinking's token budget per answer (Anthropic); None: off

    def tools(self) -> list[str]:
        """The tools offered this turn: as named, or the default list."""
        return self.tool_names or default_shown(self.page_open)

    @classmethod
    def naming(cls, names: list[str], page_open: bool) -> dict[str, Any]:
        """The fields that name ``names`` for the call: nothing for the default list."""
        return {"page_open": page_open} if names == default_shown(page_open) else {"tool_names": names}


class ToolCallInput(BaseModel):
    task_id: str = omitted("")  # the workflow's id: filled in by the activity (see LlmCallInput)
    turn: int
    workspace: str
    call: ToolCallRequest
    # Where the result entry goes in the context store (None: not stored by the activity).
    context_id: str | None = None
    result_seq: int | None = None
    # The task's approval mode ("dangerous", "always", "never"), so the activity checks the
    # gate itself: a call its mode requires approval for runs only if ``approved`` is the
    # call's digest. None (no mode named) is refused.
    approval: str | None = None
    approved: str | None = omitted()
    network: bool = omitted(False)  # the task's tools may reach the network (--network)
    mcp: McpCall | None = omitted()  # set for a call of an MCP tool: which server and tool run it
    # The task's browser as recorded (browser tools reopen it on a worker that lost it);
    # sent only with browser tools' calls, and left out of the JSON when None.
    browser: BrowserState | None = omitted()


__all__ = [
    "LLM_ACTIVITY",
    "TOOL_ACTIVITY",
    "LlmCallInput",
    "PromptParams",
    "ToolCallInput",
    "ToolOutcome",
    "TurnResult",
]


class SessionRecord(BaseModel):
    """A finished task, recorded in its session so the next task can start from it."""

    session: str
    context_id: str
    workflow_id: str
    status: str
    final_text: str
    total: int
    new_entries: list[Entry] = []  # entries the store does not have yet


class PromptContextInput(BaseModel):
    workspace: str
    session: str | None = None
