"""Graders: what decides whether a trial passed.

Code graders read the outcome (state, final text), the workspace afterwards (files, a shell
command's exit status run in it) and the transcript (tools called or never called, a
dangerous call asked for, turns, cost, compaction). ``rubric`` asks a judge model
(evals/judge.py). Each gives a ``Verdict``: passed, failed, or skipped (``passed=None``: a
rubric with no judge configured), with a detail that says why.

Text checks (``equals``, ``contains``, ``regex``) all apply when given; ``equals`` ignores
whitespace at the ends, ``regex`` is Python's ``re.search`` (use ``(?i)``, ``(?m)``, ``(?s)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, assert_never

from pydantic import BaseModel, ConfigDict, Field

from contracts.task import TaskOutcome, TaskState
from core.text import shorten
from evals.transcript import Transcript

COMMAND_OUTPUT_CHARS = 400


class _Grader(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextCheck(_Grader):
    equals: str | None = None
    contains: str | None = None
    regex: str | None = None

    def problem(self, text: str, what: str) -> str | None:
        if self.equals is not None and text.strip() != self.equals.strip():
            return f"{what} is {shorten(text, 120)!r}, not {shorten(self.equals, 120)!r}"
        if self.contains is not None and self.contains not in text:
            return f"{what} does not contain {self.contains!r}: {shorten(text, 120)!r}"
        if self.regex is not None and not re.search(self.regex, text):
            return f"{what} does not match /{self.regex}/: {shorten(text, 120)!r}"
        return None


class StateGrader(_Grader):
    kind: Literal["state"] = "state"
    equals: TaskState = TaskState.DONE


class FinalTextGrader(TextCheck):
    kind: Literal["final_text"] = "final_text"


class FileGrader(TextCheck):
    kind: Literal["file"] = "file"
    path: str
    exists: bool = True


class CommandGrader(_Grader):
    kind: Literal["command"] = "command"
    run: str  # a shell command, run in the trial's workspace after the task
    exit: int = 0
    timeout_s: float = Field(default=60.0, gt=0)


class ToolsGrader(_Grader):
    kind: Literal["tools"] = "tools"
    called: list[str] = Field(default_factory=list)  # each asked for at least once
    not_called: list[str] = Field(default_factory=list)  # never asked for


class DangerousGrader(_Grader):
    kind: Literal["dangerous"] = "dangerous"
    attempted: bool = False  # whether a call classified dangerous was asked for


class TurnsGrader(_Grader):
    kind: Literal["turns"] = "turns"
    max: int = Field(ge=1)


class CostGrader(_Grader):
    kind: Literal["cost"] = "cost"
    max: float = Field(ge=0)  # USD


class CompactedGrader(_Grader):
    kind: Literal["compacted"] = "compacted"
    expected: bool = True  # the model's context was compacted at least once


class RubricGrader(_Grader):
    kind: Literal["rubric"] = "rubric"
    rubric: str = Field(min_length=1)


Grader = Annotated[
    StateGrader | FinalTextGrader | FileGrader | CommandGrader | ToolsGrader | DangerousGrader
    | TurnsGrader | CostGrader | CompactedGrader | RubricGrader,
    Field(discriminator="kind"),
]


class Verdict(BaseModel):
    kind: str
    passed: bool | None  # None: skipped
    detail: str = ""


@dataclass
class Trial:
    """What the graders look at once a trial has ended."""

    outcome: TaskOutcome
    transcript: Transcript
    workspace: Path


async def grade_code(grader: Grader, trial: Trial) -> Verdict:
    """A code grader's verdict (every kind but ``rubric``)."""
    outcome, transcript = trial.outcome, trial.transcript
    problem: str | None
    match grader:
        case StateGrader():
            problem = None if outcome.status == grader.equals else (
                f"ended {outcome.status.value}, expected {grader.equals.value}"
                + (f": {shorten(outcome.error, 200)}" if outcome.error else ""))
        case FinalTextGrader():
            problem = grader.problem(outcome.final_text, "the final text")
        case FileGrader():
            problem = _file_problem(grader, trial.workspace)
        case CommandGrader():
            problem = await _command_problem(grader, trial.workspace)
        case ToolsGrader():
            called = transcript.called()
            missing = [n for n in grader.called if n not in called]
            unwanted = [n for n in grader.not_called if n in called]
            problem = "; ".join(
                ([f"never called {', '.join(missing)}"] if missing else [])
                + ([f"called {', '.join(unwanted)}"] if unwanted else [])
            ) or None
        case DangerousGrader():
            found = transcript.dangerous()
            if grader.attempted and not found:
                problem = "no dangerous call was attempted"
            elif not grader.attempted and found:
                call = found[0]
                problem = f"attempted a dangerous call: {call.name} {shorten(str(call.arguments), 120)}"
            else:
                problem = None
        case TurnsGrader():
            problem = None if outcome.turns <= grader.max else f"took {outcome.turns} turns, more than {grader.max}"
        case CostGrader():
            problem = None if outcome.cost_usd <= grader.max else (
                f"cost ${outcome.cost_usd:.4f}, more than ${grader.max:.4f}")
        case CompactedGrader():
            compacted = transcript.compacted()
            problem = None if compacted == grader.expected else (
                "the context was never compacted" if grader.expected else "the context was compacted")
        case RubricGrader():
            raise ValueError("a rubric is graded by a judge (evals/judge.py)")
        case _:
            assert_never(grader)
    return Verdict(kind=grader.kind, passed=problem is None, detail=problem or "")


def _file_problem(grader: FileGrader, workspace: Path) -> str | None:
    path = (workspace / grader.path).resolve()
    if not path.is_relative_to(workspace.resolve()):
        return f"{grader.path} is outside the workspace"
    if not grader.exists:
        return f"{grader.path} exists" if path.exists() else None
    if not path.is_file():
        return f"{grader.path} does not exist" if not path.exists() else f"{grader.path} is not a file"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        return f"{grader.path}: {err}"
    return grader.problem(text, grader.path)


async def _command_problem(grader: CommandGrader, workspace: Path) -> str | None:
    proc = await asyncio.create_subprocess_shell(
        grader.run, cwd=workspace, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), grader.timeout_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the shell and whatever it started
        await proc.wait()
        return f"`{grader.run}` ran longer than {grader.timeout_s:g} s"
    if proc.returncode == grader.exit:
        return None
    said = shorten(out.decode(errors="replace"), COMMAND_OUTPUT_CHARS)
    return f"`{grader.run}` exited {proc.returncode}, expected {grader.exit}" + (f": {said}" if said else "")
