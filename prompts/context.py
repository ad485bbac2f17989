"""What the dynamic part of the system prompt shows besides the environment.

``load_prompt_context`` reads it from disk; ``build_system_prompt`` renders it.

- memory: ``MEMORY.md`` at the workspace root (the file the ``memory`` tool
  writes). For a task in a session whose ``<data_dir>/sessions/<session>/MEMORY.md``
  exists, that file's facts are shown too, after the workspace's.
- agents: ``AGENTS.md`` at the workspace root, the project's conventions.
- skills: names and descriptions of the skills under ``skills_dirs``
  (activities/prompt.py passes ``tools.skills.skills_dirs``, where ``load_skill`` finds them).
- preferences: ``AGENT_USER_PREFERENCES`` (``PromptSettings``), or else
  ``<data_dir>/preferences.md``.

Each text is capped at ``FILE_CAP_CHARS`` with a note saying so. A file that
cannot be read, or that resolves outside the workspace, becomes a one-line
note in its place; loading never raises for a bad file.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from core.settings import PromptSettings
from tools.skills import SkillInfo, discover_skills, read_text

FILE_CAP_CHARS = 20_000
MEMORY_FILE = "MEMORY.md"
AGENTS_FILE = "AGENTS.md"
PREFERENCES_FILE = "preferences.md"
PREFERENCES_ENV = "AGENT_USER_PREFERENCES"


class PromptContext(BaseModel):
    """Per-workspace (and per-user) texts for the dynamic part of the system prompt."""

    memory: str = ""
    agents: str = ""
    skills: list[SkillInfo] = []
    preferences: str = ""


def load_prompt_context(
    workspace: Path,
    *,
    data_dir: Path,
    session: str | None = None,
    skills_dirs: list[Path],
    settings: PromptSettings,
) -> PromptContext:
    """The prompt context of a task in ``workspace`` (see the module docstring for the rules)."""
    workspace = Path(workspace)
    memory = read_capped(workspace / MEMORY_FILE, root=workspace)
    session_path = session_memory(data_dir, session)
    if session_path is not None:
        shared = read_capped(session_path, root=data_dir)
        memory = f"{memory}\n\nSession {session!r}:\n{shared}".strip() if shared else memory
    preferences = settings.user_preferences
    return PromptContext(
        memory=memory,
        agents=read_capped(workspace / AGENTS_FILE, root=workspace),
        skills=discover_skills(skills_dirs),
        preferences=_cap(preferences, PREFERENCES_ENV) if preferences else read_capped(
            data_dir / PREFERENCES_FILE, root=data_dir
        ),
    )


def session_memory(data_dir: Path, session: str | None) -> Path | None:
    """The session's own MEMORY.md, if the session has one (and its name stays in ``sessions/``)."""
    if not session:
        return None
    sessions = (Path(data_dir) / "sessions").resolve()
    path = (sessions / session / MEMORY_FILE).resolve()
    if not path.is_relative_to(sessions) or not path.is_file():
        return None
    return path


def read_capped(path: Path, *, root: Path, cap: int = FILE_CAP_CHARS) -> str:
    """The text of ``path`` capped at ``cap`` characters; "" if absent; a note if unreadable."""
    label = path.name
    if not path.exists() and not path.is_symlink():
        return ""
    if not path.resolve().is_relative_to(Path(root).resolve()):
        return f"[{label} was not loaded: it points outside {root}]"
    try:
        read = read_text(path, cap)
    except OSError as exc:
        return f"[{label} could not be read: {exc.strerror or exc}]"
    text = read.text.strip()
    if read.truncated:
        text += f"\n[{label} is cut here: showing its first {cap} characters of {read.size} bytes]"
    return text


def _cap(text: str, label: str, cap: int = FILE_CAP_CHARS) -> str:
    if len(text) <= cap:
        return text
    return f"{text[:cap]}\n[{label} is cut here: showing its first {cap} of {len(text)} characters]"


__all__ = [
    "FILE_CAP_CHARS",
    "PromptContext",
    "SkillInfo",
    "load_prompt_context",
    "read_capped",
    "session_memory",
]
