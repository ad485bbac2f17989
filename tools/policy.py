"""A tool call's danger level and the reason for it, from the tool's declared policy.

Called by the LLM activity when the model's reply arrives, so the
classification is recorded in the workflow history with the call and a
replay never re-classifies with newer rules.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from tools.base import Danger, schema_of
from tools.registry import REGISTRY, coerce_args
from tools.shell_policy import classify_command


def classify_call(name: str, arguments: dict[str, Any]) -> tuple[Danger, str]:
    tool = REGISTRY.get(name)
    if tool is None:
        return Danger.SAFE, "unknown tool: it will not run"
    if name == "shell" and isinstance(arguments.get("command"), str):
        return classify_command(arguments["command"])
    if tool.classify is None:
        return tool.danger, _reason(name, tool.danger)
    try:
        args = tool.args_model.model_validate(coerce_args(schema_of(tool.args_model), arguments))
    except ValidationError:
        return tool.danger, _reason(name, tool.danger)
    danger = tool.classify(args)
    return danger, _reason(name, danger)


def _reason(name: str, danger: Danger) -> str:
    return "" if danger is not Danger.DANGEROUS else f"{name} is declared dangerous"
