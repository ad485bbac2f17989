"""Which tools a task offers the model, and which of them it shows on a turn.

Pure data and functions over tool names, so the workflow can read them without importing
the tools. Which tools run as a child workflow or are hidden from sub-agents is declared once,
in core/tool_args.py, for the tools and the workflow alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.mcp import MCP_PREFIX, matches
from core.tool_args import CHILD_WORKFLOW_TOOLS, NOT_FOR_SUBAGENTS
from core.tool_outcome import BrowserState

# The one default tool list: what a task offers when its input names none. Opt-in tools
# (``search``, which needs an API key) are added by the CLI when configured.
DEFAULT_TOOLS = [
    "message", "shell", "file", "plan", "fetch_url", "load_skill", "memory", "spawn",
    "visit", "view", "click", "input", "scroll", "screenshot",
]
# The browser tools that act on an open page: offered only while the task has one open
# (``LoopState.browser``), so a task that never browses sees only ``visit``.
PAGE_TOOLS = ("view", "click", "input", "scroll", "screenshot")
BROWSER_TOOLS = ("visit", *PAGE_TOOLS)


def offered_names(
    tools: list[str] | None,
    mcp: Sequence[str] = (),
    *,
    allow: list[str],
    deny: list[str],
    may_spawn: bool,
    minimal: bool,
) -> list[str]:
    """The tools offered to the model: the task's list (plus ``mcp``, the MCP tools listed at
    its start) minus what its place hides. It depends only on the input and that recorded
    listing, so it is the same every turn and the prompt cache holds.

    No ``tools``: the default tools and every MCP tool. Otherwise its plain names, and the MCP
    tools its names or globs match. ``allow`` narrows, ``deny`` removes (names or globs);
    ``may_spawn`` False hides the sub-agent tools, ``minimal`` those not for sub-agents."""
    if not tools:
        names = [*DEFAULT_TOOLS, *mcp]
    else:
        plain = [n for n in tools if not n.startswith(MCP_PREFIX) and not _is_glob(n)]
        names = plain + [n for n in mcp if matches(n, tools)]
    if allow:
        names = [n for n in names if matches(n, allow)]
    names = [n for n in names if not matches(n, deny)]
    if not may_spawn:
        names = [n for n in names if n not in CHILD_WORKFLOW_TOOLS]
    if minimal:
        names = [n for n in names if n not in NOT_FOR_SUBAGENTS]
    return ["message"] + [n for n in names if n != "message"]  # message first: the only way to finish


def default_shown(page_open: bool) -> list[str]:
    """The default tool list as the model sees it, with or without an open page."""
    return list(DEFAULT_TOOLS) if page_open else [n for n in DEFAULT_TOOLS if n not in PAGE_TOOLS]


def shown_tools(offered: list[str], browser: BrowserState | None) -> list[str]:
    """The offered tools the model sees this turn: the page tools only while a page is open."""
    if browser is not None and browser.open:
        return offered
    return [n for n in offered if n not in PAGE_TOOLS]


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")
