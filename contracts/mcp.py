"""MCP servers as tool sources: their configuration, the tools a task lists from them, and
what a call of one carries to the tool activity.

The configuration is the usual ``mcpServers`` JSON (``parse_mcp_config``): a server is
``{"command": ..., "args": [...], "env": {...}}`` (stdio) or ``{"type": "http", "url": ...,
"headers": {...}}`` (streamable HTTP; ``"type": "sse"`` for servers that still need SSE),
plus this project's safety keys: ``approve`` (tools that always wait for approval),
``trust`` (tools treated as safe whatever their annotations), ``allow`` and ``deny`` (which
tools are offered at all); each a list of names or globs. ``{{secret:NAME}}`` placeholders in
``env`` and ``headers`` stay placeholders here: only the worker fills them in.

Pure pydantic and pure functions: the workflow reads these.
"""

from __future__ import annotations

import json
import re
from fnmatch import fnmatchcase
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.messages import ToolSpec
from core.tool_outcome import Danger

MCP_CONFIG_ENV = "AGENT_MCP_CONFIG"  # the worker's own servers, for every task that asks
MCP_LIST_ACTIVITY = "mcp_list_tools"
MCP_TOOLS_QUERY = "mcp_tools"  # the workflow query an LLM activity reads a task's MCP tools from
MCP_PREFIX = "mcp__"
NAME_LIMIT = 64  # the longest tool name the model providers accept
DEFAULT_CALL_TIMEOUT_S = 120.0
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]+")


class McpServerConfig(BaseModel):
    """One entry of ``mcpServers``. Unknown keys (other clients' own) are ignored."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["stdio", "http", "sse"] = "stdio"
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    approve: list[str] = Field(default_factory=list)  # always wait for approval
    trust: list[str] = Field(default_factory=list)  # treated as safe
    allow: list[str] | None = None  # None: every tool the server lists
    deny: list[str] = Field(default_factory=list)
    timeout_s: float = Field(default=DEFAULT_CALL_TIMEOUT_S, gt=0)  # one call, seconds
    disabled: bool = False

    @model_validator(mode="before")
    @classmethod
    def _infer_type(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        kind = str(data.get("type") or data.get("transport") or "").lower().replace("_", "-")
        if kind in ("streamable-http", "streamablehttp", "http"):
            data["type"] = "http"
        elif kind == "sse":
            data["type"] = "sse"
        elif kind in ("", "stdio"):
            data["type"] = "http" if data.get("url") and not data.get("command") else "stdio"
        for key in ("approve", "trust", "deny", "allow"):  # true: every tool
            if data.get(key) is True:
                data[key] = ["*"]
        return data

    @model_validator(mode="after")
    def _check(self) -> McpServerConfig:
        if self.type == "stdio" and not self.command:
            raise ValueError("a stdio server needs a command")
        if self.type != "stdio" and not self.url:
            raise ValueError(f"an {self.type} server needs a url")
        return self

    def offers(self, tool: str) -> bool:
        """Whether the config lets the server's tool be offered at all."""
        if self.allow is not None and not matches(tool, self.allow):
            return False
        return not matches(tool, self.deny)

    def danger(self, tool: str, hints: McpHints) -> tuple[Danger, str]:
        """A tool's danger: the config's overrides first, then the server's annotations
        (``destructiveHint`` needs approval, ``readOnlyHint`` is safe, anything else moderate)."""
        if matches(tool, self.approve):
            return Danger.DANGEROUS, f"the MCP configuration asks approval for {tool}"
        if matches(tool, self.trust):
            return Danger.SAFE, ""
        if hints.destructive is True:
            return Danger.DANGEROUS, f"the MCP server marks {tool} destructive"
        if hints.read_only is True:
            return Danger.SAFE, ""
        return Danger.MODERATE, ""

    def fingerprint(self) -> str:
        """What identifies the connection (placeholders, not values): two tasks configuring
        the same server share it."""
        keep = self.model_dump(include={"type", "command", "args", "env", "cwd", "url", "headers"})
        return json.dumps(keep, sort_keys=True)


class McpHints(BaseModel):
    """The tool annotations that matter here."""

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None


class McpTool(BaseModel):
    """One MCP tool as a task offers it, recorded in the history at listing."""

    name: str  # what the model calls: mcp__<server>__<tool>
    server: str
    tool: str  # the server's own name
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)
    danger: Literal["safe", "moderate", "dangerous"] = "moderate"
    reason: str = ""  # why it needs approval
    idempotent: bool = False  # readOnlyHint or idempotentHint: a call cut off may run again
    # readOnlyHint (and not destructive): its calls change nothing and run in parallel with the
    # reply's other read-only calls (``ToolCallRequest.parallel``).
    read_only: bool = False

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)


class McpListInput(BaseModel):
    task_id: str
    context_id: str
    servers: dict[str, McpServerConfig] = Field(default_factory=dict)  # the task's own
    worker: bool = False  # the worker's AGENT_MCP_CONFIG servers too
    # The task was started with --network: without it, the task's own HTTP servers are not
    # contacted at all (the worker's are the operator's, and are listed either way).
    network: bool = False


class McpListing(BaseModel):
    tools: list[McpTool] = Field(default_factory=list)
    errors: dict[str, str] = Field(default_factory=dict)  # server -> why it could not be listed
    digests: dict[str, str] = Field(default_factory=dict)  # server -> digest of what it listed


class McpCall(BaseModel):
    """What the tool activity needs to run an MCP call (``ToolCallInput.mcp``)."""

    server: str
    tool: str
    config: McpServerConfig | None = None  # None: the worker's own entry for the server
    listed: str = ""  # digest of the server's tools when the task listed them


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, in the characters and length every provider accepts."""
    name = f"{MCP_PREFIX}{server}__{_NAME_CHARS.sub('_', tool)}"
    return name if len(name) <= NAME_LIMIT else name[:NAME_LIMIT]


def matches(name: str, patterns: list[str] | None) -> bool:
    return any(fnmatchcase(name, p) for p in patterns or ())


def parse_mcp_config(text: str, source: str = "MCP config") -> dict[str, McpServerConfig]:
    """The servers of an ``mcpServers`` JSON document (disabled ones left out); ValueError
    with the reason when it is not one."""
    try:
        data = json.loads(text)
    except ValueError as err:
        raise ValueError(f"{source} is not JSON: {err}") from None
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ValueError(f'{source} has no "mcpServers" object')
    found: dict[str, McpServerConfig] = {}
    for name, entry in servers.items():
        if not _SERVER_NAME.fullmatch(name) or "__" in name:
            raise ValueError(f"{source}: server name {name!r} must be letters, digits, - and single _")
        try:
            config = McpServerConfig.model_validate(entry)
        except ValidationError as err:
            problem = "; ".join(e["msg"].removeprefix("Value error, ") for e in err.errors(include_url=False))
            raise ValueError(f"{source}: server {name!r}: {problem}") from None
        if not config.disabled:
            found[name] = config
    return found
