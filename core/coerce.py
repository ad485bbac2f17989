"""Near-miss tool arguments coerced towards their JSON schema (seed 000's coerceToolArgs).

Models send ``"42"`` for an integer, ``"true"`` for a boolean, a JSON string for a list.
``coerce_args`` fixes what it safely can and leaves the rest for validation to report.
Pure: used by the tool boundary and by the engine for the arguments it reads itself.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from pydantic import BaseModel

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_NULL = frozenset({"null", "none", ""})
_REF_PREFIX = "#/$defs/"


@functools.lru_cache(maxsize=256)
def _schema(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """``model.model_json_schema()``, generated once per model (a fresh copy each call)."""
    return json.loads(_schema(model))


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
