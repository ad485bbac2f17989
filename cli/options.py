"""The options that describe a task, shared by ``run``, ``start`` and ``schedule create``."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from contracts.task import ApprovalMode, TaskInput
from providers.factory import MODES

MIN_THINKING_BUDGET = 1024  # Anthropic's minimum budget_tokens


def add_task_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", help="directory the task works in (default: current directory)")
    parser.add_argument("--model", help="model name (default: $AGENT_MODEL)")
    parser.add_argument("--max-iterations", type=positive_int, default=50, metavar="TURNS")
    parser.add_argument("--approval", choices=[m.value for m in ApprovalMode], default="dangerous",
                        help="which tool calls wait for a person (default: dangerous)")
    parser.add_argument("--approval-timeout", type=positive_seconds, default=None, metavar="SECONDS",
                        help="deny a pending call after this long (default: wait forever)")
    parser.add_argument("--session", help="start from the history of this session's earlier tasks (run and start: "
                        "by default a new session named after the task, so it can be continued)")
    parser.add_argument("--permissions", metavar="FILE",
                        help="standing allow and deny rules for the task's tool calls "
                        "(default: the workspace's .agent/permissions.toml, if any; see docs/permissions.md)")
    parser.add_argument("--provider", choices=list(MODES), help="tool-calling mode (default: $AGENT_PROVIDER or openai)")
    parser.add_argument("--fallback", metavar="PROVIDER:MODEL,...", help="failover chain (default: $AGENT_FALLBACK)")
    parser.add_argument("--no-stream", action="store_true",
                        help="ask the model for whole answers (stream: false), for servers that fail "
                        "when streaming (default: stream, unless AGENT_STREAM=0)")
    parser.add_argument("--network", action="store_true",
                        help="let the task's tools reach the network: shell commands, fetch_url, search, the browser, "
                        "its own HTTP MCP servers (all are cut off by default)")
    parser.add_argument("--context-window", type=positive_int, metavar="TOKENS",
                        help="the model's context window (default: from the model table, see docs/providers.md)")
    parser.add_argument("--provider-wait", type=seconds, default=1800.0, metavar="SECONDS",
                        help="how long a task waits out a model that is down before failing (default: 1800)")
    parser.add_argument("--cost-limit", type=amount, metavar="USD", help="fail the task when it spends more")
    parser.add_argument("--thinking-budget", type=thinking_budget, metavar="TOKENS",
                        help="extended thinking (anthropic): tokens the model may think per answer, "
                        f"at least {MIN_THINKING_BUDGET} (default: off)")
    parser.add_argument("--continue-as-new-after", type=positive_int, default=TaskInput.model_fields[
                        "continue_as_new_after"].default, metavar="TURNS",
                        help="turns per workflow run before it continues as new (default: %(default)s; "
                        "sooner when Temporal suggests it)")
    parser.add_argument("--failover-after", type=positive_int, default=3, metavar="N",
                        help="failed attempts on one model before the next in the chain (default: 3)")
    parser.add_argument("--mcp-config", metavar="FILE",
                        help="MCP servers whose tools the task may use, in the mcpServers JSON format (see docs/mcp.md)")
    parser.add_argument("--tools", type=name_list, metavar="NAMES",
                        help="the tools offered: comma-separated names or globs, built-in or mcp__SERVER__TOOL "
                        "(default: the default tools and every MCP tool)")
    parser.add_argument("--allow-tools", type=name_list, default=[], metavar="NAMES",
                        help="offer only tools matching these names or globs")
    parser.add_argument("--verify", choices=["auto", "off"], default="auto", help="auto: a task that changed files or ran commands is asked once to check its work before it finishes (default: auto)")
    parser.add_argument("--parallel", type=positive_int, default=TaskInput.model_fields["max_parallel"].default, metavar="N", help="read-only calls of one reply that run at once (default: %(default)s; 1: one after another)")
    parser.add_argument("--deny-tools", type=name_list, default=[], metavar="NAMES",
                        help="never offer tools matching these names or globs")


def thinking_budget(text: str) -> int:
    value = int(text)
    if value < MIN_THINKING_BUDGET:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_THINKING_BUDGET} tokens (the API's minimum), got {value}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _from(low: float, said: str, *, strict: bool = False) -> Callable[[str], float]:
    """An argument type: a finite number of at least ``low`` (more than it, ``strict``)."""
    def parse(text: str) -> float:
        value = _number(text)
        if value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(f"{said}, got {text}")
        return value
    return parse


seconds = _from(0, "must be 0 or more seconds")  # a duration that may be zero (do not wait)
positive_seconds = _from(0, "must be more than 0 seconds", strict=True)
amount = _from(0, "must be 0 or more")


def name_list(text: str) -> list[str]:
    """``a,b,mcp__git__*``: names or globs, comma-separated."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated tool names or globs")
    return names
