"""The tools by name, and the one way to call them.

``execute`` is the boundary between what the model sent and a handler: it
coerces near-miss arguments (``"42"`` for an integer, a JSON string for a
list), validates them, and turns every kind of bad input into a result the
model can act on. It never raises for bad input; only cancellation passes
through.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from core.cache import BoundedCache
from core.coerce import coerce_args, schema_of
from core.compaction import compact_line as core_compact_line
from core.messages import ToolCallRequest, ToolSpec
from core.permissions import RULES_FILE
from core.text import shorten
from tools import browser, fetch, file, memory, message, plan, search, shell, skills, spawn
from tools.base import Danger, StrictArgs, ToolContext, ToolDefinition, ToolOutcome
from tools.shell_policy.shape import command_shape

REGISTRY: dict[str, ToolDefinition[Any]] = {
    tool.name: tool
    for tool in (
        message.TOOL, shell.TOOL, file.TOOL, search.TOOL, fetch.TOOL, plan.TOOL, spawn.TOOL,
        skills.TOOL, memory.TOOL, *browser.TOOLS,
    )
}
# Per tool, the argument keys that name a call in a compacted summary line.
COMPACT_KEYS: dict[str, tuple[str, ...]] = {name: tool.compact_keys for name, tool in REGISTRY.items()}



def specs(names: Sequence[str]) -> list[ToolSpec]:
    """Specs of the named tools; unknown names raise KeyError."""
    return [REGISTRY[name].spec() for name in names]


# --- execution ------------------------------------------------------------


async def execute(
    name: str, arguments: dict[str, Any], ctx: ToolContext, *, parse_error: str | None = None
) -> ToolOutcome:
    """Run one tool call; bad input becomes an error or retry result, never an exception."""
    tool = REGISTRY.get(name)
    if tool is None:
        return ToolOutcome(
            status="error",
            content=f"Unknown tool {name!r}. Available tools: {', '.join(REGISTRY)}.",
        )
    if parse_error is not None:
        return ToolOutcome(
            status="retry",
            content=(
                f"The arguments for {name!r} were not valid JSON ({parse_error}). "
                "Send the arguments again as one JSON object."
            ),
        )
    try:
        args = _validate(tool, arguments)
    except ValidationError as exc:
        return ToolOutcome(status="retry", content=_explain(tool, exc))
    try:
        return await tool.handler(args, ctx)
    except Exception as exc:  # CancelledError is a BaseException and passes through
        failure = f"{type(exc).__name__}: {exc}"
        return ToolOutcome(status="error", content=f"Tool {name!r} failed: {failure}")


# The latest calls' arguments as validated, by the arguments object: a call is classified and
# placed when the model's reply arrives, then gated, checked for idempotence and run, each step
# needing its arguments validated. Kept with a copy that must still equal them.
_VALIDATED: BoundedCache[tuple[str, int], tuple[Any, dict[str, Any], StrictArgs]] = BoundedCache(64)


def _validate(tool: ToolDefinition[Any], arguments: Any) -> StrictArgs:
    key = (tool.name, id(arguments))
    kept = _VALIDATED.get(key)
    if kept is not None and kept[0] is arguments and kept[1] == arguments:
        return kept[2]
    args = tool.args_model.model_validate(coerce_args(schema_of(tool.args_model), arguments))
    if isinstance(arguments, dict):
        _VALIDATED.put(key, (arguments, dict(arguments), args))  # the object itself: its id stays its own
    return args


def _explain(tool: ToolDefinition[Any], exc: ValidationError) -> str:
    lines = [f"Invalid arguments for tool {tool.name!r}:"]
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        what = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            what = "unknown field"
        elif error["type"] not in ("missing", "value_error"):
            what += f" (got {shorten(repr(error['input']), 60, flat=False)})"
        lines.append(f"- {where}: {what}" if where else f"- {what}")
    schema = schema_of(tool.args_model)
    required = set(schema.get("required", ()))
    fields = [f"{f} (required)" if f in required else f for f in schema.get("properties", {})]
    lines.append(f"Expected fields: {', '.join(fields)}.")
    return "\n".join(lines)


def classify_call(name: str, arguments: dict[str, Any], workspace: Path | None = None) -> tuple[Danger, str]:
    """A call's danger level and the reason a person reads when asked to approve it.

    The LLM activity calls this when the model's reply arrives, so the classification is
    recorded in the history with the call and a replay never re-classifies with newer rules.
    With the task's ``workspace``, a tool with ``classify_in`` (the shell) completes the reason
    from it (the script a command runs); the danger is the same without.
    """
    tool = REGISTRY.get(name)
    if tool is None:
        return Danger.SAFE, "unknown tool: it will not run"
    danger, reason = tool.danger, ""
    if tool.classify is not None:
        try:
            args = _validate(tool, arguments)
            verdict = (tool.classify(args) if tool.classify_in is None or workspace is None
                       else tool.classify_in(args, workspace))
        except ValidationError:
            verdict = tool.danger  # invalid arguments never run: the call comes back as a retry
        danger, reason = verdict if isinstance(verdict, tuple) else (verdict, "")
    if danger is Danger.DANGEROUS and not reason:
        reason = f"{name} is declared dangerous"
    return danger, reason


def is_idempotent(name: str, arguments: dict[str, Any]) -> bool:
    """Whether a call cut off by a crash may simply run again (see ``ToolDefinition.idempotent``)."""
    tool = REGISTRY.get(name)
    if tool is None:
        return True  # an unknown tool never runs
    if not callable(tool.idempotent):
        return tool.idempotent
    try:
        return tool.idempotent(_validate(tool, arguments))
    except ValidationError:
        return True  # invalid arguments never run: the call comes back as a retry


def runs_in(name: str, arguments: dict[str, Any]) -> Literal["activity", "local_activity", "child_workflow"]:
    """Where the engine runs a call: the tool's ``runs_in``, or ``local_activity`` when the
    tool declares these arguments local (see ``ToolDefinition.local``). Invalid arguments and
    unknown tools take the ordinary activity, which answers them."""
    tool = REGISTRY.get(name)
    if tool is None:
        return "activity"
    if tool.runs_in != "activity" or not tool.local:
        return tool.runs_in
    if not callable(tool.local):
        return "local_activity"
    try:
        return "local_activity" if tool.local(_validate(tool, arguments)) else "activity"
    except ValidationError:
        return "activity"


def access(name: str, arguments: dict[str, Any]) -> tuple[bool, bool]:
    """Whether a call is read-only, and whether it may run in parallel with the reply's other
    such calls (``ToolDefinition.read_only`` and ``parallel``; parallel needs read-only).
    Invalid arguments and unknown tools are neither: they run alone, where they are answered."""
    tool = REGISTRY.get(name)
    if tool is None or (not tool.read_only and not tool.parallel):
        return False, False
    try:
        args = _validate(tool, arguments) if callable(tool.read_only) or callable(tool.parallel) else None
    except ValidationError:
        return False, False
    read_only = tool.read_only(args) if callable(tool.read_only) else tool.read_only
    parallel = tool.parallel(args) if callable(tool.parallel) else tool.parallel
    return bool(read_only), bool(read_only and parallel)


class Listed(Protocol):
    """A tool the task listed from an MCP server (``contracts.mcp.McpTool``): its declared
    danger, and whether it is read-only (annotated ``readOnlyHint``)."""

    @property
    def danger(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def read_only(self) -> bool: ...


def declare(call: ToolCallRequest, offered: Sequence[str], workspace: Path | None = None,
            listed: Mapping[str, Listed] | None = None, local_tools: bool = True,
            redact: Callable[[str], str] = str) -> ToolCallRequest:
    """The call with what its tool declares, recorded with it in the history: its danger and
    the reason a person reads (``classify_call``, or an MCP tool's ``listed`` danger; through
    ``redact``), where it runs (``runs_in``; never a local activity without ``local_tools``),
    whether it is read-only and may run in parallel (``access``; an MCP tool annotated
    ``readOnlyHint`` is both) and its one-line summary. A call of a tool not ``offered`` gets the answer it will have
    instead of running, naming the tools the task has."""
    if call.name not in offered:
        return call.model_copy(update={"not_offered": f"Unknown tool {call.name!r}: this task has no such tool. "
                                                      f"Available tools: {', '.join(offered)}."})
    mcp = listed.get(call.name) if listed else None
    danger, reason = (Danger(mcp.danger), mcp.reason) if mcp else classify_call(call.name, call.arguments, workspace)
    declared: dict[str, Any] = {"danger": danger.value, "danger_reason": redact(reason) or None}
    declared.update(rule_shape(call.name, call.arguments))
    tool = REGISTRY.get(call.name)
    if tool is not None:
        where = runs_in(call.name, call.arguments)
        declared["runs_in"] = "activity" if where == "local_activity" and not local_tools else where
        declared["summary"] = tool.summarize(call.arguments)
        declared["read_only"], declared["parallel"] = access(call.name, call.arguments)
    elif mcp is not None:
        declared["summary"] = " ".join(str(v) for v in call.arguments.values())
        declared["read_only"] = declared["parallel"] = mcp.read_only
    return call.model_copy(update=declared)


def rule_shape(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """What permission rules match a call against (``core/permissions.py``): its rule key and,
    for the shell, the words of each command it runs. A call that names the rules file has no
    rule key: no rule lets it skip asking."""
    commands: list[list[str]] = []
    key: str | None = name
    if name == shell.TOOL.name:
        command = arguments.get("command")
        commands, key = command_shape(command) if isinstance(command, str) else ([], None)
    if RULES_FILE.rsplit("/", 1)[-1] in json.dumps(arguments, ensure_ascii=False):
        key = None
    return {"rule_key": key, "commands": commands}


def compact_line(name: str, arguments: dict[str, Any], result_status: str | None = None) -> str:
    """One line of XML naming the call, e.g. ``<tool name="file" action="read" path="a.txt"/>``."""
    return core_compact_line(name, arguments, result_status, COMPACT_KEYS.get(name, ()))
