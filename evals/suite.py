"""A suite of eval cases, as a TOML or JSON file.

A case is a task to give the agent (an instruction and the workspace files it starts from),
its limits, how the harness plays the person (approvals, replies, interjections), the
graders that decide whether a trial passed, and, for offline runs, the model's side: a
``script`` of steps for the scripted model, or a ``replay`` file of model answers recorded
from a real task. TOML is the format to write by hand (comments, multi-line strings, read
by the standard library's ``tomllib``); JSON is read and written the same way.

    [[cases]]
    name = "write-hello"
    instruction = "Create hello.txt containing exactly: hello world"
    graders = [
      { kind = "state", equals = "DONE" },
      { kind = "file", path = "hello.txt", equals = "hello world" },
    ]
    script = [
      { tool = "file", args = { action = "write", path = "hello.txt", content = "hello world\\n" } },
      { tool = "message", args = { type = "result", text = "Wrote hello.txt." } },
    ]
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from contracts.task import ApprovalMode
from core.messages import TurnResult
from evals.graders import Grader
from fakes.step import Step

CASE_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,59}$"


class SuiteError(Exception):
    """A suite file that cannot be read, or a case that makes no sense: one line for the user."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Limits(Strict):
    turns: int = Field(default=30, ge=1)  # the task's max_iterations
    cost: float | None = Field(default=None, gt=0)  # USD: the task fails when it spends more
    context_window: int | None = Field(default=None, ge=1024)  # tokens (default: the model's)
    timeout_s: float = Field(default=600.0, gt=0)  # the harness stops a trial that runs longer


class Answer(Strict):
    """A scripted decision on the next call that waits for approval."""

    approve: bool
    reason: str = ""


class Interjection(Strict):
    """A message the person sends once the task has had ``turn`` answers from the model."""

    turn: int = Field(ge=0)
    text: str = Field(min_length=1)


class ScriptStep(Strict):
    """One answer of the scripted model: text, and a tool call or none."""

    text: str = ""
    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    delay_s: float = Field(default=0.0, ge=0)

    def step(self) -> Step:
        calls: list[tuple[str, dict[str, Any] | str]] = [(self.tool, self.args)] if self.tool else []
        return Step(text=self.text, tool_calls=calls, delay_s=self.delay_s)


class Case(Strict):
    name: str = Field(pattern=CASE_NAME)
    instruction: str = Field(min_length=1)
    description: str = ""
    files: dict[str, str] = Field(default_factory=dict)  # path -> content, written before the task
    workspace: str | None = None  # a directory (relative to the suite file) copied first
    limits: Limits = Field(default_factory=Limits)
    approval_mode: ApprovalMode = ApprovalMode.DANGEROUS
    # Calls that wait for approval: all approved, all denied, or these answers in order
    # (calls beyond the list are denied).
    approvals: Literal["approve", "deny"] | list[Answer] = "deny"
    replies: list[str] = Field(default_factory=list)  # answers to the model's questions, in order
    interjections: list[Interjection] = Field(default_factory=list)
    graders: list[Grader] = Field(min_length=1)
    script: list[ScriptStep] | None = None  # the scripted model's answers (--demo)
    replay: str | None = None  # recorded model answers, a JSON file relative to the suite (--replay)

    @field_validator("files")
    @classmethod
    def _relative_paths(cls, files: dict[str, str]) -> dict[str, str]:
        for path in files:
            parts = PurePosixPath(path).parts
            if not parts or PurePosixPath(path).is_absolute() or ".." in parts:
                raise ValueError(f"workspace file {path!r} must be a relative path inside the workspace")
        return files


class JudgeConfig(Strict):
    """The model that grades rubrics (through the project's providers)."""

    model: str
    provider: str = "openai"


class Suite(Strict):
    name: str = ""
    description: str = ""
    judge: JudgeConfig | None = None
    cases: list[Case] = Field(default_factory=list)
    path: Path | None = Field(default=None, exclude=True)  # where it was read from: relative paths start there

    @model_validator(mode="after")
    def _unique_names(self) -> Suite:
        names = [c.name for c in self.cases]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"case names must be unique; repeated: {', '.join(twice)}")
        return self

    @property
    def title(self) -> str:
        return self.name or (self.path.stem if self.path else "suite")

    def resolve(self, relative: str) -> Path:
        base = self.path.parent if self.path else Path.cwd()
        return (base / relative).resolve()


class Recording(BaseModel):
    """A finished task's model answers, as its history recorded them (``record``)."""

    workflow_id: str
    model: str
    provider: str
    turns: list[TurnResult]


def load_suite(path: str | Path) -> Suite:
    path = Path(path)
    try:
        raw = read_document(path)
        suite = Suite.model_validate(raw)
    except (OSError, ValueError) as err:
        raise SuiteError(f"{path}: {_brief(err)}") from None
    suite.path = path.resolve()
    return suite


def read_document(path: Path) -> dict[str, Any]:
    """A suite file's data: TOML (``.toml``) or JSON (anything else)."""
    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("a suite is a table (TOML) or an object (JSON) with a list of cases")
    return data


def load_recording(suite: Suite, case: Case) -> Recording:
    assert case.replay is not None
    path = suite.resolve(case.replay)
    try:
        return Recording.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SuiteError(f"case {case.name}: recorded answers {path}: {_brief(err)}") from None


def _brief(err: Exception) -> str:
    if isinstance(err, ValidationError):
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        return f"{where}: {first['msg']}{more}"
    return str(err)
