"""The task workflow's public models: its input, states, status view and outcome.

Shared by the workflow, the starter and the tests, so fields can be added
backwards-compatibly in one place.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Literal

from pydantic import BaseModel, Field

from contracts.attachments import Attachment
from contracts.mcp import McpServerConfig, McpTool
from contracts.toolset import offered_names
from core.entries import Entry
from core.lean import omitted, omitted_empty
from core.messages import Usage
from core.permissions import PermissionRule, Permissions
from core.tool_args import PlanItem
from core.tool_outcome import BrowserState

TASK_WORKFLOW = "AgentTask"
DEFAULT_TASK_QUEUE = "agent-tasks"


class TaskState(str, Enum):
    INITIALIZING = "INITIALIZING"
    THINKING = "THINKING"
    EXECUTING_TOOL = "EXECUTING_TOOL"
    WAITING_APPROVAL = "WAITING_APPROVAL"
    WAITING_REPLY = "WAITING_REPLY"
    WAITING_PROVIDER = "WAITING_PROVIDER"  # the model (and its failover chain) is down: waited out
    FINALIZING = "FINALIZING"
    DONE = "DONE"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"  # a cancellation request (the UI, `temporal workflow cancel`, the SDK)
    # Only as the CLI reads a closed workflow: the task itself never gets to say these.
    TERMINATED = "TERMINATED"
    TIMED_OUT = "TIMED_OUT"

    @property
    def finished(self) -> bool:
        return self in (TaskState.DONE, TaskState.FAILED, TaskState.CANCELLED, TaskState.TERMINATED, TaskState.TIMED_OUT)

    @property
    def waiting(self) -> bool:
        return self in (TaskState.WAITING_APPROVAL, TaskState.WAITING_REPLY)


class ApprovalMode(str, Enum):
    """Which tool calls wait for a person (seed 003's ask modes)."""

    DANGEROUS = "dangerous"  # only calls classified dangerous
    ALWAYS = "always"  # every call, even safe ones
    NEVER = "never"  # none

    def requires(self, danger: str | None) -> bool:
        if self is ApprovalMode.ALWAYS:
            return True
        if self is ApprovalMode.NEVER:
            return False
        return danger == "dangerous"


class PendingApproval(BaseModel):
    call_id: str
    tool: str
    arguments: dict
    danger: str
    reason: str
    turn: int
    requested_at: datetime
    digest: str = ""  # call_digest(tool, arguments): what an approval of this call names
    # The rule "yes, and allow commands like this for this task" would add (``shell(git push)``);
    # None: no rule can be made safe for this call (a compound command line, say).
    rule: str | None = None


class ApprovalDecision(BaseModel):
    """Sent by a person (signal ``approve`` or update ``decide``); the shape is in
    ``workflows/policy.py`` ``DECIDE_PAYLOAD`` too, for people sending it by hand."""

    approved: bool
    call_id: str | None = None  # None: whichever call is pending
    # The call as the person saw it (``call_digest`` of its tool and arguments): the decision
    # is refused if the pending call is not that one. None (no digest) is refused.
    digest: str | None = None
    reason: str = ""
    decided_by: str = "user"
    # "yes, and allow commands like this for this task": with an approval, the pending call's
    # rule (``PendingApproval.rule``) is added to the task's allowed rules.
    remember: bool = False


class Interjection(BaseModel):
    text: str
    sent_by: str = "user"
    # Files and images sent with it (a chat's): saved to the workspace as it is delivered.
    attachments: list[Attachment] = omitted_empty(list)
    ref: str | None = omitted()  # a chat message's event id: named back as the task ends (``LoopState.heard``)


class ModelRef(BaseModel):
    """One link of the failover chain: a provider mode and a model."""

    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"


class LoopState(BaseModel):
    """Everything the task loop knows, in one typed model.

    It is also what continue-as-new carries (``TaskInput.carry``): a field added here is
    carried to the next run as it is, unless it says ``exclude=True`` (state of one run
    only, such as a pending approval, which never outlives a run: continue-as-new waits
    until nothing is pending). Its field names are those the carries in recorded histories
    have, so those still validate: rename none.
    """

    context_id: str = ""  # the context store's key for this task, stable across runs
    base: int = 0  # seq of the first entry this run holds in memory
    entries: list[Entry] = Field(default_factory=list)  # entries from ``base`` on
    # The model's view of every entry before ``base``, compacted to the context window when the
    # last run continued as new. The context store holds those entries in full; this copy in
    # the history is what rebuilds the model's request when a worker's store has lost them.
    prefix: list[Entry] = Field(default_factory=list)
    synced: int = 0  # entries below this seq are known to be in the context store
    tool_written: dict[int, str] = Field(default_factory=dict)  # seq -> digest, written by tools
    turn: int = 0
    no_tool_streak: int = 0
    usage: Usage = Field(default_factory=Usage)
    loop_recent: list[str] = Field(default_factory=list)  # signatures of the latest tool calls
    inbox: list[Interjection] = Field(default_factory=list)  # messages not yet delivered
    heard: list[str] = omitted_empty(list)  # the ``ref`` of each message received (a chat's), in order
    runs: int = 1  # workflow runs so far, this one included (the carry holds the previous count)
    prompt_date: str = ""
    last_report_turns: int = 0
    prompt_context: str | None = None  # blob digest of the prompt context snapshot
    plan: list[PlanItem] = Field(default_factory=list)
    plan_turn: int = 0
    plan_reminded_turn: int = 0
    children: int = 0
    model_index: int = 0  # position in the failover chain
    # The task queue of the worker that served the last model call, whose store and cache are
    # warm: later calls go there first and fall back to the shared queue when it is gone.
    affinity_queue: str | None = None
    cost_usd: float = 0.0
    cost_estimated: bool = False
    # The window the model's server said it has, learned from a context overflow: compaction
    # aims at it from then on (None: the task's context_window).
    context_window: int | None = None
    provider_down_since: datetime | None = None  # the first failure of the current outage
    mcp_tools: list[McpTool] = Field(default_factory=list)  # listed from the task's MCP servers at start
    mcp_digests: dict[str, str] = Field(default_factory=dict)  # server -> digest of the tools it listed
    # The task's browser as its last browser call left it (tabs, active tab); None: never
    # opened. Carried across runs; a worker that lost the pages reopens them from it.
    browser: BrowserState | None = None
    # Rules added by "yes, and allow commands like this" answers: calls they match run without
    # asking, in this task only.
    allowed: list[PermissionRule] = omitted_empty(list)
    # What the task changed (files written, commands run: one short line each) since the last
    # verification reminder; and whether the model's latest attempt to finish got one (the
    # next finishes). ``workflows/verify.py``.
    changes: list[str] = Field(default_factory=list)
    verify_asked: bool = False
    # -- this run only ----------------------------------------------------------------
    phase: TaskState = Field(default=TaskState.INITIALIZING, exclude=True)
    last_activity: str = Field(default="", exclude=True)
    turns_this_run: int = Field(default=0, exclude=True)
    pending: PendingApproval | None = Field(default=None, exclude=True)
    decision: ApprovalDecision | None = Field(default=None, exclude=True)
    question: str | None = Field(default=None, exclude=True)
    stop_reason: str | None = Field(default=None, exclude=True)
    outcome: TaskOutcome | None = Field(default=None, exclude=True)


class TaskInput(BaseModel):
    instruction: str
    workspace: str
    model: str
    provider: str = "openai"
    max_iterations: int = 50
    max_no_tool_retries: int = 3
    tools: list[str] | None = None  # None: the default tool set
    stream: bool = True
    approval: ApprovalMode = ApprovalMode.DANGEROUS
    approval_timeout_s: float | None = None  # None: wait for a decision forever
    search_attributes: bool = False  # upsert AgentState & co. (registered on the server)
    context_window: int = 128_000  # the model's window in tokens, for compaction
    continue_as_new_after: int = 500  # turns per run, unless Temporal suggests earlier
    session: str | None = None  # start from the compacted history of this session's tasks
    # The conversation workflow that started this task (a chat, workflows/conversation.py): the
    # task reports its progress, approvals, questions and end to it. None: no chat.
    conversation: str | None = None
    # Files and images that came with the instruction (a chat's); saved to the workspace at
    # the start and not carried past the first run.
    attachments: list[Attachment] = omitted_empty(list)
    context_id: str | None = None  # set by the workflow; stable across continue-as-new
    carry: LoopState | None = None  # set on continue-as-new: the loop's state, carried over
    deny_tools: list[str] = Field(default_factory=list)  # never offered to the model (names or globs)
    allow_tools: list[str] = Field(default_factory=list)  # when set, only these are offered (names or globs)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)  # the task's MCP servers
    worker_mcp: bool = False  # also the servers of the worker's AGENT_MCP_CONFIG
    depth: int = 0  # 0 for a task a person started; sub-agents are one deeper than their parent
    max_depth: int = 2  # sub-agents may not spawn below this depth
    minimal_prompt: bool = False  # sub-agents: tools, workspace and runtime only
    fallbacks: list[ModelRef] = Field(default_factory=list)  # tried in order when a model keeps failing
    failover_after: int = 3  # failed attempts on one model before moving to the next
    cost_limit_usd: float | None = None  # fail the task when its spend passes this
    network: bool = False  # the task's tools may reach the network (tools/egress.py; off by default)
    # Extended thinking: the model's thinking budget in tokens per answer (Anthropic, at least
    # 1024); None: no extended thinking.
    thinking_budget: int | None = None
    # A model that stays down (the whole failover chain) is waited out this long, in
    # WAITING_PROVIDER, trying again every provider_pause_s, before the task fails.
    provider_wait_s: float = 1800.0
    provider_pause_s: float = 60.0
    llm_attempts: int = 8  # attempts of one model call (Temporal retries) before the above applies
    # Standing rules (the project's .agent/permissions.toml, read by the CLI at start): fixed
    # for the task, so a model cannot rewrite its own rules mid-task.
    permissions: Permissions = Field(default_factory=Permissions, exclude_if=lambda rules: not rules.allow and not rules.deny)
    # "auto": a task that changed files or ran commands is asked once to verify its work when
    # it first tries to finish (workflows/verify.py); "off": it finishes at once.
    verify: Literal["auto", "off"] = "auto"
    # The most read-only calls of one reply that run at the same time (workflows/parallel.py);
    # 1 runs them one after another. In the input, so every replay decides the same.
    max_parallel: int = Field(default=8, ge=1)

    @property
    def uses_mcp(self) -> bool:
        return bool(self.mcp_servers) or self.worker_mcp

    def offered_tools(self, mcp: list[str] | tuple[str, ...] = ()) -> list[str]:
        """The tools offered to the model (``contracts.toolset.offered_names``), plus ``mcp``,
        the MCP tools listed at its start: the same every turn."""
        return offered_names(self.tools, mcp, allow=self.allow_tools, deny=self.deny_tools,
                             may_spawn=self.depth < self.max_depth, minimal=self.minimal_prompt)


# Why a task failed: the type of the ApplicationError its workflow execution fails with, so
# the Temporal UI, `temporal workflow list` and the failure filter see it.
FailureKind = Literal["max_iterations", "cost_limit", "stopped", "provider", "no_tool_call", "context_overflow"]


class TaskOutcome(BaseModel):
    status: TaskState
    final_text: str = ""
    turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    stopped: bool = False
    error: str | None = None
    failure: FailureKind | None = None  # set when status is FAILED
    runs: int = 1  # workflow runs the task took (continue-as-new)
    cost_usd: float = 0.0
    cost_estimated: bool = False  # a model without a price row, or usage the server did not report


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
    pending_approval: PendingApproval | None = None
    question: str | None = None  # what the task asked, while WAITING_REPLY
    queued_interjections: int = 0
    approval: ApprovalMode = ApprovalMode.DANGEROUS
    run: int = 1
    session: str | None = None
    plan: list[dict] = Field(default_factory=list)
    depth: int = 0
    cost_usd: float = 0.0
    cost_estimated: bool = False
    provider: str = ""
    allowed: list[str] = Field(default_factory=list)  # rules "allow commands like this" added
    permissions: Permissions = Field(default_factory=Permissions)  # the task's standing rules


class EventsPage(BaseModel):
    """What the ``events`` query returns: entries after a sequence number, and where the task is."""

    entries: list[Entry]
    next_seq: int
    base: int = 0  # earlier entries are in earlier runs of the task (continue-as-new)
    status: TaskStatus
    outcome: TaskOutcome | None = None


LoopState.model_rebuild()
