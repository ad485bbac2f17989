"""Which tools a task started from the CLI offers: ``--tools``, ``--allow-tools``,
``--deny-tools`` (names and globs, built-in and MCP) and ``--mcp-config``.

Built-in names are checked here, where the tool registry is known; globs over MCP tools are
kept as they are and matched by the task once it has listed its servers' tools.
"""

from __future__ import annotations

import argparse
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from contracts.mcp import MCP_PREFIX, McpServerConfig, parse_mcp_config
from runtime.secrets import SecretStore
from tools.registry import REGISTRY


class SelectionError(ValueError):
    """A tool name or an MCP configuration the CLI cannot use (said in one line)."""


def tool_fields(args: argparse.Namespace, default: list[str] | None) -> dict[str, Any]:
    """The TaskInput fields for the task's tools. ``default``: the CLI's default tool list
    (None: the engine's)."""
    chosen = getattr(args, "tools", None)
    if chosen:
        tools: list[str] | None = expand(chosen)
    elif default is not None:
        tools = [*default, f"{MCP_PREFIX}*"]  # a list of its own still offers every MCP tool
    else:
        tools = None
    path = getattr(args, "mcp_config", None)
    settings = args.settings  # starter.py's
    return {
        "tools": tools,
        "allow_tools": list(getattr(args, "allow_tools", None) or []),
        "deny_tools": list(getattr(args, "deny_tools", None) or []),
        "mcp_servers": load_mcp_config(path, SecretStore.from_settings(settings.secrets)) if path else {},
        # The worker's own servers (AGENT_MCP_CONFIG) are listed when it is set here too, as it is
        # for `run`'s worker in this process: a task without MCP schedules no listing at all.
        "worker_mcp": settings.mcp.config is not None,
    }


def expand(patterns: list[str]) -> list[str]:
    """Plain names checked against the registry; a glob becomes the built-in names it matches,
    and is kept for the MCP tools the task will list."""
    names: list[str] = []
    for pattern in patterns:
        if any(c in pattern for c in "*?["):
            names += [n for n in REGISTRY if fnmatchcase(n, pattern) and n not in names]
            names.append(pattern)
        elif pattern in REGISTRY or pattern.startswith(MCP_PREFIX):
            names.append(pattern)
        else:
            raise SelectionError(f"unknown tool {pattern!r}: built-in tools are {', '.join(REGISTRY)}; "
                                 f"MCP tools are named {MCP_PREFIX}SERVER__TOOL")
    return names


def load_mcp_config(path: str, secrets: SecretStore) -> dict[str, McpServerConfig]:
    """The servers of an mcpServers file, with any secret this CLI knows as a placeholder (the
    worker fills it in when it starts the server)."""
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as err:
        raise SelectionError(f"cannot read the MCP config {path}: {err.strerror or err}") from None
    try:
        servers = parse_mcp_config(text, f"MCP config {path}")
    except ValueError as err:
        raise SelectionError(str(err)) from None
    return secrets.redact_obj(servers)
