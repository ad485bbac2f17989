"""The ``memory`` tool: stable facts in ``MEMORY.md``, dated notes in ``memory/``.

``MEMORY.md`` at the workspace root holds curated facts, one ``- fact`` line
each; the prompt layer shows it in every system prompt. ``memory/YYYY-MM-DD.md``
is an append-only log of the day, in the handler's local time (the tool runs in
an activity, so reading the clock here is fine).

- append: add a fact; a fact already there (ignoring case and spacing) is not added twice.
- revise: replace the fact line equal to ``old`` with ``new``; an empty ``new`` removes it.
- read: MEMORY.md and the names of the recent daily notes.
- note: append a timestamped line to today's notes.
- search: the lines of MEMORY.md and memory/*.md that best match a query, with their file
  and date (tools/memory_index.py).

Facts are single lines of at most ``MAX_FACT_CHARS``; MEMORY.md stops growing at
``MAX_MEMORY_CHARS``. Files are opened beneath the workspace without following
symlinks, and locked while read and rewritten, so two tasks sharing a workspace
do not lose each other's facts.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import stat
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, Literal, assert_never

from pydantic import ValidationInfo, field_validator, model_validator

from core.text import shorten
from tools.base import Danger, Field, StrictArgs, ToolContext, ToolDefinition, ToolOutcome
from tools.beneath import DIR_FLAGS, Refused, open_at
from tools.memory_index import HEADER, MEMORY_FILE, NOTES_DIR, Found, search

MAX_FACT_CHARS = 500
MAX_NOTE_CHARS = 1000
MAX_MEMORY_CHARS = 16_000  # under the prompt layer's 20 KB cap, so every fact is shown
MAX_READ_CHARS = 20_000
RECENT_NOTES = 7
MAX_SHOWN_CHARS = 300  # of a line a search finds
_NOTE_FILE = re.compile(r"\d{4}-\d{2}-\d{2}\.md")

DESCRIPTION = f"""\
Remember facts and notes across tasks; action search returns the lines of MEMORY.md and memory/*.md
that best match query, with their file and date. Facts live in MEMORY.md at the workspace root, which
is shown to you in the system prompt of every task; notes go to memory/YYYY-MM-DD.md.
- append: add one fact (a single line, at most {MAX_FACT_CHARS} characters). Good facts are
  stable and useful later: the user's preferences, how to build and test this project,
  where things are, decisions taken. Not task progress, not guesses, never secrets.
- revise: replace the fact line equal to old with new; an empty new removes the fact.
  Use it when a fact is outdated or wrong.
- read: the current MEMORY.md and the names of the recent daily notes.
- note: append a timestamped line to today's notes, for what happened rather than what is true.
- search: the lines that best match query, best first: ranked by the words they share (BM25),
  and also by meaning when the worker has an embeddings model. Use it to find what earlier tasks
  noted before redoing work or asking; read a whole note with the file tool.
Example: {{"action": "append", "fact": "Tests run with `make test`; plain pytest misses the fixtures."}}
"""


def now() -> datetime:
    """The local time; tests replace it."""
    return datetime.now().astimezone()


class MemoryArgs(StrictArgs):
    action: Literal["append", "revise", "read", "note", "search"]
    fact: str | None = Field(None, description="append: the fact, one line.")
    old: str | None = Field(None, description="revise: the current fact line, exactly.")
    new: str | None = Field(None, description="revise: the new fact line; empty removes the fact.")
    note: str | None = Field(None, description="note: the line to add to today's notes.")
    query: str | None = Field(None, description="search: the words to look for.")

    @field_validator("fact", "old", "new", "note", "query")
    @classmethod
    def _one_line(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if len(value.splitlines()) > 1:
            raise ValueError("must be a single line; record several facts with several calls")
        limit = MAX_NOTE_CHARS if info.field_name == "note" else MAX_FACT_CHARS
        if len(value) > limit:
            raise ValueError(f"must be at most {limit} characters (got {len(value)}); make it shorter")
        return value

    @model_validator(mode="after")
    def _needs_its_fields(self) -> MemoryArgs:
        needed = {"append": ("fact",), "revise": ("old", "new"), "note": ("note",), "search": ("query",)}
        missing = [f for f in needed.get(self.action, ()) if getattr(self, f) is None]
        if missing:
            raise ValueError(f"action {self.action!r} needs {' and '.join(missing)}")
        empty = [f for f in ("fact", "old", "note", "query") if getattr(self, f) == ""]
        if empty:
            raise ValueError(f"{' and '.join(empty)} must not be empty")
        return self


# --- files beneath the workspace ------------------------------------------


@contextlib.contextmanager
def _opened(root: Path, name: str, flags: int, *, subdir: str | None = None) -> Iterator[BinaryIO]:
    """``root[/subdir]/name`` opened without following symlinks, and locked (shared for reading)."""
    fd = os.open(root.resolve(), DIR_FLAGS)
    try:
        if subdir is not None:
            with contextlib.suppress(FileExistsError):
                os.mkdir(subdir, dir_fd=fd)
            sub = open_at(fd, subdir, DIR_FLAGS)
            os.close(fd)
            fd = sub
        file_fd = open_at(fd, name, flags | os.O_NONBLOCK)
    finally:
        os.close(fd)
    with os.fdopen(file_fd, "r+b" if flags & os.O_RDWR else "ab" if flags & os.O_APPEND else "rb") as f:
        if not stat.S_ISREG(os.fstat(file_fd).st_mode):
            raise Refused(f"{name} is not a regular file")
        fcntl.flock(file_fd, fcntl.LOCK_EX if flags & (os.O_RDWR | os.O_WRONLY) else fcntl.LOCK_SH)
        yield f


def _fact_of(line: str) -> str:
    """The fact on a MEMORY.md line: the text after its list bullet, if any."""
    text = line.strip()
    return text[2:].strip() if text[:2] in ("- ", "* ") else text


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _decoded(f: BinaryIO) -> str:
    try:
        return f.read().decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"{MEMORY_FILE} is not UTF-8 text; fix it with the file tool first") from None


def _rewrite(f: BinaryIO, text: str) -> None:
    f.seek(0)
    f.write(text.encode("utf-8"))
    f.truncate()


# --- actions --------------------------------------------------------------


def _append(root: Path, fact: str) -> ToolOutcome:
    with _opened(root, MEMORY_FILE, os.O_RDWR | os.O_CREAT) as f:
        text = _decoded(f) or HEADER
        if any(_same(_fact_of(line), fact) for line in text.splitlines()):
            return ToolOutcome(content=f"Already in {MEMORY_FILE}: {fact}")
        line = f"- {fact}\n"
        if len(text) + len(line) > MAX_MEMORY_CHARS:
            raise Refused(
                f"{MEMORY_FILE} is full ({MAX_MEMORY_CHARS} characters); revise or remove outdated facts first"
            )
        _rewrite(f, (text if text.endswith("\n") else text + "\n") + line)
    return ToolOutcome(content=f"Remembered in {MEMORY_FILE}: {fact}")


def _revise(root: Path, old: str, new: str) -> ToolOutcome:
    old = _fact_of(old)
    new = _fact_of(new)
    try:
        with _opened(root, MEMORY_FILE, os.O_RDWR) as f:
            lines = _decoded(f).splitlines(keepends=True)
            hits = [i for i, line in enumerate(lines) if line.strip() and _fact_of(line) == old]
            if not hits:
                facts = [_fact_of(line) for line in lines if line.lstrip().startswith(("- ", "* "))]
                shown = "\n".join(f"- {fact}" for fact in facts) or "(no facts)"
                raise Refused(f"no fact in {MEMORY_FILE} equals old exactly. The facts are:\n{shown}")
            taken = any(_same(_fact_of(line), new) for i, line in enumerate(lines) if i not in hits)
            kept = [line for i, line in enumerate(lines) if i not in hits]  # copies of old go too
            if new and not taken:
                kept.insert(hits[0], f"- {new}\n")
            _rewrite(f, "".join(kept))
    except FileNotFoundError:
        raise Refused(f"{MEMORY_FILE} does not exist yet; there is nothing to revise") from None
    done = f"Removed from {MEMORY_FILE}: {old}" if not new else f"Revised in {MEMORY_FILE}: {old} -> {new}"
    return ToolOutcome(content=done)


def _read(root: Path) -> ToolOutcome:
    try:
        with _opened(root, MEMORY_FILE, os.O_RDONLY) as f:
            text = f.read().decode("utf-8", errors="replace").strip()
    except FileNotFoundError:
        text = ""
    if len(text) > MAX_READ_CHARS:
        text = f"{text[:MAX_READ_CHARS]}\n[{MEMORY_FILE} cut at {MAX_READ_CHARS} of {len(text)} characters]"
    notes_dir = root / NOTES_DIR
    notes = []
    if notes_dir.is_dir() and not notes_dir.is_symlink():
        notes = sorted(p.name for p in notes_dir.iterdir() if _NOTE_FILE.fullmatch(p.name))[-RECENT_NOTES:]
    parts = [text or f"{MEMORY_FILE} is empty: no facts yet."]
    if notes:
        listing = "\n".join(f"- {NOTES_DIR}/{name}" for name in notes)
        parts.append(f"Recent daily notes (read them with the file tool):\n{listing}")
    return ToolOutcome(content="\n\n".join(parts))


def _note(root: Path, note: str) -> ToolOutcome:
    when = now()
    name = f"{when:%Y-%m-%d}.md"
    with _opened(root, name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, subdir=NOTES_DIR) as f:
        head = f"# Notes {when:%Y-%m-%d}\n\n" if os.fstat(f.fileno()).st_size == 0 else ""
        f.write(f"{head}- {when:%H:%M:%S} {note}\n".encode())
    return ToolOutcome(content=f"Noted in {NOTES_DIR}/{name}.")


def _found(query: str, found: Found) -> ToolOutcome:
    count = f"{len(found.hits)} line{'s' if len(found.hits) != 1 else ''}"
    head = f"Memory search {query!r}: {count}, best first ({found.ranking})."
    if not found.hits:
        head = f"Memory search {query!r}: no line of {MEMORY_FILE} or {NOTES_DIR}/*.md matches ({found.ranking})."
    lines = [f"- {hit.path}:{hit.line} ({hit.date}) {shorten(hit.text.removeprefix('- '), MAX_SHOWN_CHARS)}"
             for hit in found.hits]
    return ToolOutcome(content="\n".join([head, *([found.problem] if found.problem else []), *lines]))


async def memory_tool(args: MemoryArgs, ctx: ToolContext) -> ToolOutcome:
    workspace = ctx.workspace
    try:
        match args.action:
            case "append":
                assert args.fact is not None
                return await asyncio.to_thread(_append, workspace, args.fact)
            case "revise":
                assert args.old is not None and args.new is not None
                return await asyncio.to_thread(_revise, workspace, args.old, args.new)
            case "read":
                return await asyncio.to_thread(_read, workspace)
            case "note":
                assert args.note is not None
                return await asyncio.to_thread(_note, workspace, args.note)
            case "search":
                assert args.query is not None
                return _found(args.query, await search(workspace, args.query, ctx.settings.memory, ctx.index_dir))
            case _:
                assert_never(args.action)
    except Refused as exc:
        return ToolOutcome(status="error", content=str(exc))
    except OSError as exc:
        return ToolOutcome(status="error", content=f"memory {args.action} failed: {exc.strerror or exc}")


def classify(args: MemoryArgs) -> Danger:
    return Danger.SAFE if args.action in ("read", "search") else Danger.MODERATE


TOOL = ToolDefinition(
    name="memory",
    description=DESCRIPTION,
    args_model=MemoryArgs,
    handler=memory_tool,
    danger=Danger.MODERATE,
    idempotent=lambda args: args.action in ("read", "search"),  # an append cut off by a crash is not repeated
    read_only=lambda args: args.action in ("read", "search"),
    parallel=True,  # when read-only: searches share one index (tests/tools/test_memory_search.py)
    classify=classify,
    compact_keys=("action",),
)
