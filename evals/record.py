"""``record ID --into SUITE``: a finished task becomes a case whose model answers are replayed.

From the task's history: its instruction, limits and approval mode (its input), the model's
answers (every LLM activity result, ``TurnResult``, saved beside the suite as
``<suite>.recorded/<case>.json``), what the person did (approval decisions in order,
replies, interjections at the turn they came), and graders that hold what the task did:
how it ended, its final text, its turns at most, the tools it called, and the files it
left in its workspace (those it created, changed or deleted). The case starts from the
workspace as it was when the task began: the task's first checkpoint on this host, or the
workspace as it is now if the task never changed it (or ``start`` names the files).

A TOML suite gets the case appended as text (its comments and layout stay as they are);
a JSON suite is rewritten.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus

from contracts.task import TaskOutcome
from evals.graders import FileGrader, FinalTextGrader, Grader, StateGrader, ToolsGrader, TurnsGrader
from evals.run import EvalError, outcome_of
from evals.suite import Answer, Case, Interjection, Limits, Recording, Suite, load_suite, read_document
from evals.transcript import Transcript, read_transcript
from runtime.checkpoints import CheckpointError, Checkpoints

INLINE_BYTES = 256 * 1024  # workspace files beyond this (or binary ones) go into a directory beside the suite
INLINE_FILES = 200
FILE_GRADERS = 20  # files the task changed, checked after a replay
FILE_GRADER_BYTES = 20_000


async def record_task(
    client: Client, workflow_id: str, suite_path: Path, checkpoints: Checkpoints, *, name: str | None = None,
    start: Path | None = None,
) -> tuple[Case, list[str]]:
    """Append the task as a case to the suite (created if missing); the case and notes for the
    user. ``checkpoints``: this host's, where the task's starting workspace may be."""
    handle = client.get_workflow_handle(workflow_id)
    desc = await handle.describe()
    if desc.status == WorkflowExecutionStatus.RUNNING:
        raise EvalError(f"task {workflow_id} is still running: record it once it has finished")
    transcript = await read_transcript(client, workflow_id)
    task = transcript.task
    if task is None:
        raise EvalError(f"{workflow_id} is not a task of this agent (its input does not read as one)")
    if any(call.runs_in == "child_workflow" for call in transcript.calls()):
        raise EvalError(f"task {workflow_id} ran sub-agents, whose model answers are in their own histories: "
                        "recording such a task is not supported")
    suite = load_suite(suite_path) if suite_path.exists() else Suite(path=suite_path.resolve())
    name = unique_name(name or default_name(workflow_id), suite)
    outcome = await outcome_of(client.get_workflow_handle(workflow_id, result_type=TaskOutcome))
    notes: list[str] = []
    workspace = Path(task.workspace)
    stem = suite_path.stem
    with tempfile.TemporaryDirectory() as scratch:
        began = start or starting_state(workflow_id, workspace, Path(scratch) / "start", notes, checkpoints)
        files, copied = inline_files(began)
        if copied:
            target = suite_path.parent / f"{stem}.workspaces" / name
            shutil.copytree(began, target, symlinks=True)
        graders = outcome_graders(outcome, transcript) + file_graders(began, workspace)
    recording = Recording(workflow_id=workflow_id, model=task.model, provider=task.provider, turns=transcript.turns)
    answers = suite_path.parent / f"{stem}.recorded" / f"{name}.json"
    answers.parent.mkdir(parents=True, exist_ok=True)
    answers.write_text(recording.model_dump_json(indent=1), encoding="utf-8")
    decisions = [e.decision for e in transcript.people if e.decision is not None]
    case = Case(
        name=name,
        instruction=task.instruction,
        description=f"recorded from {workflow_id} ({task.model}, {outcome.status.value}, {outcome.turns} turns)",
        files=files,
        workspace=f"{stem}.workspaces/{name}" if copied else None,
        limits=Limits(turns=task.max_iterations, cost=task.cost_limit_usd, context_window=task.context_window),
        approval_mode=task.approval,
        approvals=[Answer(approve=d.approved, reason=d.reason) for d in decisions] if decisions else "deny",
        replies=[e.message.text for e in transcript.people if e.message and e.reply],
        interjections=[Interjection(turn=e.answers, text=e.message.text)
                       for e in transcript.people if e.message and not e.reply],
        graders=graders,
        replay=f"{stem}.recorded/{name}.json",
    )
    append_case(suite_path, case)
    return case, notes


def default_name(workflow_id: str) -> str:
    name = re.sub(r"-[0-9a-f]{6}$", "", workflow_id.removeprefix("task-"))
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:50] or "recorded"


def unique_name(name: str, suite: Suite) -> str:
    taken = {c.name for c in suite.cases}
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}"
    return candidate


def starting_state(workflow_id: str, workspace: Path, scratch: Path, notes: list[str], checkpoints: Checkpoints) -> Path:
    """The workspace as the task found it: its first checkpoint here, else as it is now."""
    try:
        turns = checkpoints.turns(workspace, workflow_id)
        if turns:
            checkpoints.export(workspace, turns[min(turns)], scratch)
            return scratch
    except CheckpointError as err:
        notes.append(f"the task's checkpoints could not be read ({err})")
    if not workspace.is_dir():
        raise EvalError(f"the task's workspace {workspace} is not on this host: name the files it starts from "
                        "with --workspace DIR")
    notes.append(f"no checkpoint of the task on this host: the case starts from {workspace} as it is now")
    return workspace


def inline_files(root: Path) -> tuple[dict[str, str], bool]:
    """The files under ``root`` as text, or ({}, True) when they are too many, too large or binary."""
    files: dict[str, str] = {}
    total = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts):
        data = path.read_bytes()
        total += len(data)
        try:
            files[path.relative_to(root).as_posix()] = data.decode("utf-8")
        except UnicodeDecodeError:
            return {}, True
        if total > INLINE_BYTES or len(files) > INLINE_FILES:
            return {}, True
    return files, False


def outcome_graders(outcome: TaskOutcome, transcript: Transcript) -> list[Grader]:
    graders: list[Grader] = [StateGrader(equals=outcome.status)]
    if outcome.final_text:
        graders.append(FinalTextGrader(equals=outcome.final_text))
    if outcome.turns:
        graders.append(TurnsGrader(max=outcome.turns))
    called = sorted(transcript.called())
    if called:
        graders.append(ToolsGrader(called=called))
    return graders


def file_graders(before: Path, after: Path) -> list[Grader]:
    """What the task did to its files: each created or changed text file's contents, each
    deleted file's absence (up to FILE_GRADERS)."""
    if not after.is_dir() or before.resolve() == after.resolve():
        return []

    def listing(root: Path) -> dict[str, Path]:
        return {p.relative_to(root).as_posix(): p for p in root.rglob("*")
                if p.is_file() and not {".git", ".agent"} & set(p.relative_to(root).parts)}

    old, new = listing(before), listing(after)
    graders: list[Grader] = []
    for rel in sorted(old.keys() - new.keys()):
        graders.append(FileGrader(path=rel, exists=False))
    for rel in sorted(new):
        data = new[rel].read_bytes()
        if rel in old and old[rel].read_bytes() == data:
            continue
        if len(data) > FILE_GRADER_BYTES:
            graders.append(FileGrader(path=rel))
            continue
        try:
            graders.append(FileGrader(path=rel, equals=data.decode("utf-8")))
        except UnicodeDecodeError:
            graders.append(FileGrader(path=rel))
    return graders[:FILE_GRADERS]


def append_case(suite_path: Path, case: Case) -> None:
    data = case_data(case)
    if suite_path.suffix == ".toml":
        existing = suite_path.read_text(encoding="utf-8") if suite_path.exists() else (
            "# Eval cases recorded from finished tasks: python starter.py record ID --into FILE\n"
            f"name = {toml_value(suite_path.stem)}\n")
        text = existing.rstrip("\n") + "\n" + toml_case(data)
        Suite.model_validate(tomllib.loads(text))  # what is written reads back
    else:
        doc = read_document(suite_path) if suite_path.exists() else {"name": suite_path.stem, "cases": []}
        doc.setdefault("cases", []).append(data)
        Suite.model_validate(doc)
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    suite_path.parent.mkdir(parents=True, exist_ok=True)
    suite_path.write_text(text, encoding="utf-8")


def case_data(case: Case) -> dict[str, Any]:
    data = case.model_dump(mode="json", exclude_none=True)
    data["graders"] = [{"kind": g["kind"], **{k: v for k, v in g.items() if k != "kind" and v != []}}
                       for g in data["graders"]]
    return {k: v for k, v in data.items() if v not in ([], {}, "")}


# ---- TOML out: the subset a case needs (tables, arrays, strings, numbers, booleans) ----------


def toml_case(data: dict[str, Any]) -> str:
    lines = ["", "[[cases]]"]
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    for key, value in data.items():
        if key not in tables:
            lines.append(f"{toml_key(key)} = {toml_value(value, multiline=True)}")
    for key, table in tables.items():
        lines.append(f"[cases.{toml_key(key)}]")
        lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_value(key)


def toml_value(value: Any, multiline: bool = False) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        items = [toml_value(v) for v in value]
        if multiline and any(isinstance(v, dict) for v in value):
            return "[\n" + "".join(f"  {item},\n" for item in items) + "]"
        return "[" + ", ".join(items) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {type(value).__name__}")
