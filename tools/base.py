"""What a tool is: a definition for the model, a pure handler for the engine, a policy.

A handler takes validated arguments and a ``ToolContext`` and returns a
declarative ``ToolResult``. It never writes to the history, pushes events or
decides the next step: the workflow does that with what the result declares.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Awaitable, Callable, Generic, Literal, TypeVar

from pydantic import BaseModel, Field

from providers.types import ToolSpec


class Danger(str, Enum):
    SAFE = "safe"
    MODERATE = "moderate"
    DANGEROUS = "dangerous"


class ToolResult(BaseModel):
    """The declarative outcome of one tool call.

    status: ``ok`` (done), ``error`` (failed; the model reads ``content`` and
    can recover), ``retry`` (the call was malformed; ``content`` is a hint).
    ``final_result`` set means the task is complete with that text.
    ``ask`` set means the model is asking the user and waits for a reply.
    """

    status: Literal["ok", "error", "retry"] = "ok"
    content: str
    final_result: str | None = None
    ask: str | None = None
    info: str | None = None  # a message to the user that does not end the task
    summary: str | None = None  # one-line compact summary, if the tool wants its own
    truncated: bool = False
    exit_code: int | None = None
    # Set by the tool activity, not by handlers: the stored result entry's digest, and
    # for a large output the blob holding it in full (``content`` is then a preview).
    stored_digest: str | None = None
    blob: str | None = None
    full_chars: int | None = None


@dataclass
class ToolContext:
    """What a handler may know about where it runs."""

    workspace: Path
    task_id: str = ""
    heartbeat: Callable[[str], None] = lambda _detail: None


ArgsT = TypeVar("ArgsT", bound=BaseModel)
Handler = Callable[[Any, ToolContext], Awaitable[ToolResult]]


@dataclass(frozen=True)
class ToolDefinition(Generic[ArgsT]):
    name: str
    description: str
    args_model: type[ArgsT]
    handler: Callable[[ArgsT, ToolContext], Awaitable[ToolResult]]
    danger: Danger = Danger.SAFE
    # Per-call classification from the arguments (e.g. shell commands); None uses `danger`.
    classify: Callable[[ArgsT], Danger] | None = None
    # Keys of the arguments that identify the call in a one-line compact summary.
    compact_keys: tuple[str, ...] = field(default_factory=tuple)
    # For tools that bring outside content: the source to name when wrapping the output
    # as untrusted data (None: the output is not wrapped).
    untrusted_source: Callable[[dict[str, Any]], str | None] | None = None

    def spec(self) -> ToolSpec:
        """The definition the model sees; built once per tool (schema generation is costly)."""
        cached = _SPECS.get(self.name)
        if cached is None or cached[0] is not self:
            cached = _SPECS[self.name] = (self, self._build_spec())
        return cached[1].model_copy(deep=True)

    def _build_spec(self) -> ToolSpec:
        schema = schema_of(self.args_model)
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            if isinstance(prop.get("title"), str):
                del prop["title"]  # pydantic's auto titles cost tokens on every call
        return ToolSpec(name=self.name, description=self.description, parameters=schema)


_SPECS: dict[str, tuple[ToolDefinition[Any], ToolSpec]] = {}


@functools.lru_cache(maxsize=256)
def _schema(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """``model.model_json_schema()``, generated once per model (a fresh copy each call)."""
    return json.loads(_schema(model))


class StrictArgs(BaseModel):
    """Base for argument models: unknown fields are refused, so typos reach the model."""

    model_config = {"extra": "forbid"}


__all__ = [
    "Danger",
    "Field",
    "StrictArgs",
    "ToolContext",
    "ToolDefinition",
    "ToolResult",
]
