"""The tools by name, and the one way to call them.

``execute`` is the boundary between what the model sent and a handler: it
coerces near-miss arguments (``"42"`` for an integer, a JSON string for a
list), validates them, and turns every kind of bad input into a result the
model can act on. It never raises for bad input; only cancellation passes
through.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import quoteattr

from pydantic import ValidationError

from providers.types import ToolSpec
from tools import fetch, file, memory, message, plan, search, shell, skills, spawn
from tools.base import Danger, StrictArgs, ToolContext, ToolDefinition, ToolResult, schema_of

REGISTRY: dict[str, ToolDefinition[Any]] = {
    tool.name: tool
    for tool in (
        message.TOOL, shell.TOOL, file.TOOL, search.TOOL, fetch.TOOL, plan.TOOL, spawn.TOOL,
        skills.TOOL, memory.TOOL,
    )
}
DEFAULT_TOOLS = ("message", "shell", "file")

COMPACT_VALUE_CHARS = 80
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_NULL = frozenset({"null", "none", ""})
_REF_PREFIX = "#/$defs/"


def specs(names: Sequence[str] | None = None) -> list[ToolSpec]:
    """Specs of the named tools (DEFAULT_TOOLS if None); unknown names raise KeyError."""
    return [REGISTRY[name].spec() for name in (DEFAULT_TOOLS if names is None else names)]


# --- coercion -------------------------------------------------------------


def coerce_args(schema: dict[str, Any], value: Any) -> Any:
    """Coerce ``value`` towards a JSON schema, recursively; what cannot be coerced is left."""
    return _coerce(schema, value, schema.get("$defs", {}))


def _coerce(node: dict[str, Any], value: Any, defs: dict[str, Any]) -> Any:
    node = _deref(node, defs)
    options = node.get("anyOf") or node.get("oneOf")
    if options is None and isinstance(node.get("type"), list):
        options = [{**node, "type": t} for t in node["type"]]
    if options is not None:
        return _coerce_union([_deref(o, defs) for o in options], value, defs)
    if "enum" in node or "const" in node:
        value = _coerce_enum(node.get("enum", [node.get("const")]), value)
    match node.get("type"):
        case "integer":
            return _to_int(value)
        case "number":
            return _to_number(value)
        case "boolean":
            return _to_bool(value)
        case "string":
            is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
            return str(value) if is_number else value
        case "array":
            value = _from_json(value, list)
            if isinstance(value, list) and isinstance(node.get("items"), dict):
                return [_coerce(node["items"], item, defs) for item in value]
            return value
        case "object":
            value = _from_json(value, dict)
            if isinstance(value, dict):
                return _coerce_object(node, value, defs)
            return value
        case _:
            return value


def _deref(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Inline a ``$ref`` into ``$defs`` or a one-element ``allOf``, keeping sibling keys."""
    while True:
        name = node.get("$ref", "").removeprefix(_REF_PREFIX)
        if "$ref" in node and name in defs:
            node = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
        elif len(node.get("allOf", ())) == 1:
            node = {**node["allOf"][0], **{k: v for k, v in node.items() if k != "allOf"}}
        else:
            return node


def _coerce_union(options: list[dict[str, Any]], value: Any, defs: dict[str, Any]) -> Any:
    types = {o.get("type") for o in options}
    if value is None:
        return value
    if "null" in types and "string" not in types and isinstance(value, str):
        if value.strip().lower() in _NULL:
            return None
    for option in options:
        if _fits(option, value):  # the right type already; still coerce what is inside
            return _coerce(option, value, defs)
    for option in options:
        if option.get("type") == "null":
            continue
        coerced = _coerce(option, value, defs)
        if _fits(option, coerced):
            return coerced
    return value


def _fits(node: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` already has the JSON type ``node`` asks for (a shallow check)."""
    if "enum" in node and value not in node["enum"]:
        return False
    if "const" in node and value != node["const"]:
        return False
    match node.get("type"):
        case "null":
            return value is None
        case "boolean":
            return isinstance(value, bool)
        case "integer":
            return isinstance(value, int) and not isinstance(value, bool)
        case "number":
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        case "string":
            return isinstance(value, str)
        case "array":
            return isinstance(value, list)
        case "object":
            return isinstance(value, dict)
        case _:
            return "anyOf" not in node and "oneOf" not in node


def _coerce_enum(allowed: list[Any], value: Any) -> Any:
    if value in allowed:
        return value
    for candidate in allowed:
        if isinstance(value, str) and str(candidate).lower() == value.strip().lower():
            return candidate
    return value


def _coerce_object(node: dict[str, Any], value: dict[str, Any], defs: dict[str, Any]) -> Any:
    properties = node.get("properties", {})
    extra = node.get("additionalProperties")
    out = {}
    for key, item in value.items():
        if key in properties:
            out[key] = _coerce(properties[key], item, defs)
        elif isinstance(extra, dict):
            out[key] = _coerce(extra, item, defs)
        else:
            out[key] = item
    return out


def _to_int(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return value
    return int(number) if number.is_integer() else value


def _to_number(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return float(value.strip())
    except ValueError:
        return value


def _to_bool(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    return value


def _from_json(value: Any, kind: type) -> Any:
    if not isinstance(value, str):
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    return parsed if isinstance(parsed, kind) else value


# --- execution ------------------------------------------------------------


async def execute(
    name: str, arguments: dict[str, Any], ctx: ToolContext, *, parse_error: str | None = None
) -> ToolResult:
    """Run one tool call; bad input becomes an error or retry result, never an exception."""
    tool = REGISTRY.get(name)
    if tool is None:
        return ToolResult(
            status="error",
            content=f"Unknown tool {name!r}. Available tools: {', '.join(REGISTRY)}.",
        )
    if parse_error is not None:
        return ToolResult(
            status="retry",
            content=(
                f"The arguments for {name!r} were not valid JSON ({parse_error}). "
                "Send the arguments again as one JSON object."
            ),
        )
    try:
        args = _validate(tool, arguments)
    except ValidationError as exc:
        return ToolResult(status="retry", content=_explain(tool, exc))
    try:
        return await tool.handler(args, ctx)
    except Exception as exc:  # CancelledError is a BaseException and passes through
        failure = f"{type(exc).__name__}: {exc}"
        return ToolResult(status="error", content=f"Tool {name!r} failed: {failure}")


def _validate(tool: ToolDefinition[Any], arguments: Any) -> StrictArgs:
    schema = schema_of(tool.args_model)
    return tool.args_model.model_validate(coerce_args(schema, arguments))


def _explain(tool: ToolDefinition[Any], exc: ValidationError) -> str:
    lines = [f"Invalid arguments for tool {tool.name!r}:"]
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        what = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            what = "unknown field"
        elif error["type"] not in ("missing", "value_error"):
            what += f" (got {_short(repr(error['input']), 60)})"
        lines.append(f"- {where}: {what}" if where else f"- {what}")
    schema = schema_of(tool.args_model)
    required = set(schema.get("required", ()))
    fields = [f"{f} (required)" if f in required else f for f in schema.get("properties", {})]
    lines.append(f"Expected fields: {', '.join(fields)}.")
    return "\n".join(lines)


def danger_of(name: str, arguments: dict[str, Any]) -> Danger:
    """The policy level of one call: the tool's classification, or its default."""
    tool = REGISTRY.get(name)
    if tool is None:
        return Danger.SAFE  # it cannot run
    if tool.classify is None:
        return tool.danger
    try:
        return tool.classify(_validate(tool, arguments))
    except ValidationError:
        return tool.danger


def compact_line(name: str, arguments: dict[str, Any], result_status: str | None = None) -> str:
    """One line of XML naming the call, e.g. ``<tool name="file" action="read" path="a.txt"/>``."""
    attrs = [("name", name)]
    tool = REGISTRY.get(name)
    for key in tool.compact_keys if tool else ():
        value = arguments.get(key) if isinstance(arguments, dict) else None
        if value is not None:
            text = value if isinstance(value, str) else json.dumps(value)
            attrs.append((key, _short(text, COMPACT_VALUE_CHARS)))
    if result_status is not None:
        attrs.append(("status", result_status))
    return "<tool " + " ".join(f"{k}={quoteattr(v)}" for k, v in attrs) + "/>"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
