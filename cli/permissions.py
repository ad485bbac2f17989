"""The task's permission rules as the CLI handles them: read from the project's file when a
task starts (so they are fixed for the task and recorded in its input), and shown by
``status``. The rules themselves are ``core/permissions.py``; the format docs/permissions.md."""

from __future__ import annotations

from pathlib import Path

from contracts.task import TaskStatus
from core.permissions import RULES_FILE, Permissions, parse_permissions


def load_permissions(given: str | None, workspace: Path) -> Permissions:
    """``--permissions FILE``, else the workspace's ``.agent/permissions.toml``, else none.
    ValueError naming the file when it cannot be read or is malformed."""
    path = Path(given).expanduser() if given else workspace / RULES_FILE
    if not given and not path.is_file():
        return Permissions()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"permissions file {path}: {err.strerror or err}") from None
    return parse_permissions(text, source=str(path))


def permission_lines(status: TaskStatus) -> list[str]:
    """``status``'s lines for the rules: the standing ones and those answers added."""
    lines = []
    rules = status.permissions
    if rules.allow or rules.deny:
        kinds = [f"{kind} {', '.join(r.text for r in listed)}"
                 for kind, listed in (("allow", rules.allow), ("deny", rules.deny)) if listed]
        lines.append(f"rules:    {' · '.join(kinds)}" + (f" (from {rules.source})" if rules.source else ""))
    if status.allowed:
        lines.append(f"allowed:  {', '.join(status.allowed)} (for this task, answered \"allow commands like this\")")
    return lines
