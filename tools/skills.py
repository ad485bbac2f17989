"""Skills: instructions for one kind of work, listed in the prompt, loaded on demand.

A skill is a folder holding ``SKILL.md``, which starts with a small front
matter of ``key: value`` lines (no YAML; nested or multi-line values make the
skill malformed and it is skipped)::

    ---
    name: python-testing
    description: Use when writing or running pytest tests. Not for linting.
    ---
    # The instructions ...

The description is a routing condition (when to use, when not), because the
system prompt lists only names and descriptions; the body and the skill's
other files come through the ``load_skill`` tool.

Where skills are looked for (``skills_dirs``), first folder first:
``<workspace>/.agent/skills``, then each folder in ``AGENT_SKILLS_DIRS``
(``Settings.skills``, in the call's ``ToolContext``), then the repository's ``skills/``. A name found
in an earlier folder hides the same name in a later one. A skill folder must
lie inside its skills folder once symlinks are resolved.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from tools.base import Danger, Field, StrictArgs, ToolContext, ToolDefinition, ToolOutcome

SKILL_FILE = "SKILL.md"
WORKSPACE_SKILLS = Path(".agent") / "skills"
REPO_SKILLS = Path(__file__).parents[1] / "skills"
MAX_SKILL_FILE_CHARS = 20_000  # a SKILL.md or supporting file returned by load_skill
MAX_DESCRIPTION_CHARS = 400  # descriptions sit in every prompt; longer ones are cut
MAX_LISTED_FILES = 50
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class SkillInfo(BaseModel):
    """One skill in the catalogue: its name, its routing description, its folder."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    path: Path


# --- reading --------------------------------------------------------------


class TextRead(NamedTuple):
    text: str
    size: int  # bytes in the file
    truncated: bool  # the file holds more than ``text``


def read_text(path: Path, max_chars: int) -> TextRead:
    """The first ``max_chars`` characters of a regular file.

    Opened non-blocking so a FIFO cannot hang the read; anything but a regular
    file raises ``OSError``. Undecodable bytes are replaced.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        data = f.read(max_chars * 4 + 4)  # at most 4 bytes per character in UTF-8
    text = data.decode("utf-8", errors="replace")
    truncated = len(text) > max_chars or info.st_size > len(data)
    return TextRead(text[:max_chars], info.st_size, truncated)


def parse_front_matter(text: str) -> tuple[dict[str, str], str] | None:
    """The ``key: value`` pairs between the leading ``---`` lines and the body after them.

    None if there is no front matter or a line in it is not a plain ``key: value``.
    """
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None
    for end, line in enumerate(lines[1:], 1):  # noqa: B007 (used after the loop)
        if line.strip() == "---":
            break
    else:
        return None
    meta: dict[str, str] = {}
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or line[0].isspace() or not key.strip() or " " in key.strip():
            return None
        meta[key.strip().lower()] = _unquote(value.strip())
    return meta, "".join(lines[end + 1 :]).lstrip("\n")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


# --- discovery ------------------------------------------------------------


def skills_dirs(workspace: Path, extra: Sequence[Path]) -> list[Path]:
    """Where skills are looked for, in order of precedence (see the module docstring);
    ``extra`` (``AGENT_SKILLS_DIRS``) between the workspace's and ours."""
    return [workspace / WORKSPACE_SKILLS, *extra, REPO_SKILLS]


def discover_skills(dirs: Iterable[Path]) -> list[SkillInfo]:
    """The well-formed skills under ``dirs``, sorted by name; the first folder wins a name."""
    found: dict[str, SkillInfo] = {}
    for root in dirs:
        for skill in _skills_in(root):
            found.setdefault(skill.name, skill)
    return sorted(found.values(), key=lambda s: s.name)


def _skills_in(root: Path) -> Iterable[SkillInfo]:
    try:
        base = root.resolve()
        folders = sorted(p for p in base.iterdir() if p.is_dir())
    except OSError:
        return
    for folder in folders:
        skill = _read_skill(base, folder)
        if skill is not None:
            yield skill


def _read_skill(base: Path, folder: Path) -> SkillInfo | None:
    resolved = folder.resolve()
    skill_file = (resolved / SKILL_FILE).resolve()
    if not resolved.is_relative_to(base) or not skill_file.is_relative_to(resolved):
        return None
    try:
        text = read_text(skill_file, MAX_SKILL_FILE_CHARS).text
    except OSError:
        return None
    parsed = parse_front_matter(text)
    if parsed is None:
        return None
    meta, _body = parsed
    name, description = meta.get("name", ""), " ".join(meta.get("description", "").split())
    if not _NAME.fullmatch(name) or not description or description in ("|", ">"):
        return None
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
    return SkillInfo(name=name, description=description, path=resolved)


# --- the load_skill tool --------------------------------------------------

DESCRIPTION = """\
Load a skill: the full instructions for one kind of work, listed by name and
description in the <skills> catalogue of the system prompt.
- name: the skill's name exactly as listed. Returns its instructions and the list of its other files.
- file: optional; one of those other files (a path relative to the skill folder) to read instead.
Load a skill only when its description matches the work at hand, one at a time, once per task.
"""


class LoadSkillArgs(StrictArgs):
    name: str = Field(description="The skill's name, as listed in the catalogue.")
    file: str | None = Field(None, description="A supporting file of the skill, relative to its folder.")


def _other_files(folder: Path) -> list[str]:
    files: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            rel = Path(dirpath, name).relative_to(folder)
            if rel != Path(SKILL_FILE) and not name.startswith("."):
                files.append(rel.as_posix())
    return files


def _capped(read: TextRead, text: str, label: str) -> str:
    if not read.truncated:
        return text
    return f"{text}\n[{label} cut at {MAX_SKILL_FILE_CHARS} characters of a {read.size}-byte file]"


def _load(args: LoadSkillArgs, dirs: list[Path]) -> ToolOutcome:
    skills = {s.name: s for s in discover_skills(dirs)}
    skill = skills.get(args.name)
    if skill is None:
        available = ", ".join(skills) or "none are installed"
        return ToolOutcome(status="error", content=f"Unknown skill {args.name!r}. Available skills: {available}.")
    if args.file is not None:
        return _load_file(skill, args.file)
    read = read_text(skill.path / SKILL_FILE, MAX_SKILL_FILE_CHARS)
    parsed = parse_front_matter(read.text)
    body = parsed[1] if parsed else read.text
    files = _other_files(skill.path)
    listing = "\n".join(f"- {f}" for f in files[:MAX_LISTED_FILES]) or "(none)"
    if len(files) > MAX_LISTED_FILES:
        listing += f"\n[... {len(files) - MAX_LISTED_FILES} more files not listed]"
    content = (
        f'<skill name="{skill.name}">\n{_capped(read, body.rstrip(), SKILL_FILE)}\n</skill>\n'
        f"Other files in this skill (read one with load_skill and file):\n{listing}"
    )
    return ToolOutcome(content=content, summary=f"loaded skill {skill.name}")


def _load_file(skill: SkillInfo, raw: str) -> ToolOutcome:
    target = (skill.path / raw).resolve()
    if not target.is_relative_to(skill.path) or target == skill.path:
        return ToolOutcome(status="error", content=f"{raw!r} is not a file of skill {skill.name!r}.")
    if not target.is_file():
        files = ", ".join(_other_files(skill.path)[:MAX_LISTED_FILES]) or "none"
        return ToolOutcome(status="error", content=f"Skill {skill.name!r} has no file {raw!r}. Its files: {files}.")
    read = read_text(target, MAX_SKILL_FILE_CHARS)
    return ToolOutcome(content=_capped(read, read.text, raw))


async def load_skill(args: LoadSkillArgs, ctx: ToolContext) -> ToolOutcome:
    return await asyncio.to_thread(_load, args, skills_dirs(ctx.workspace, ctx.settings.skills.dirs))


TOOL = ToolDefinition(
    name="load_skill",
    description=DESCRIPTION,
    args_model=LoadSkillArgs,
    handler=load_skill,
    danger=Danger.SAFE,
    idempotent=True,
    local=True,
    read_only=True,
    parallel=True,
    compact_keys=("name", "file"),
)
