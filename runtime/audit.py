"""The audit log: one JSON object per tool call, appended to ``audit.jsonl``.

Each line holds ``time`` (ISO-8601, UTC), ``workflow_id``, ``turn``, ``tool``,
``arguments``, ``status``, ``exit_code``, ``duration_ms`` and ``truncated``.
Callers pass arguments already redacted; given a ``SecretStore`` the log
redacts the whole entry again before it is written.

Several workers may append to one file: each entry is written with a single
``write()`` on a file opened in append mode while holding an exclusive
``flock``, so lines never interleave. The file is created readable by its
owner only, since arguments hold commands and file contents.
"""

from __future__ import annotations

import fcntl
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from core.settings import PathSettings
from core.tool_outcome import ToolOutcome
from runtime.paths import data_dir
from runtime.secrets import SecretStore

AUDIT_FILE = "audit.jsonl"


class AuditEntry(BaseModel):
    time: str
    workflow_id: str
    turn: int
    tool: str
    arguments: dict[str, Any]
    status: str
    exit_code: int | None = None
    duration_ms: int
    truncated: bool = False


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def default_audit_path(paths: PathSettings) -> Path:
    """``audit.jsonl`` in the data directory."""
    return data_dir(paths) / AUDIT_FILE


class AuditLog:
    def __init__(self, path: Path | str, secrets: SecretStore | None = None) -> None:
        self.path = Path(path)
        self._secrets = secrets

    def append(self, entry: AuditEntry) -> AuditEntry:
        """Write ``entry`` (redacted if the log has secrets) as one line; returns what was written."""
        if self._secrets is not None and not self._secrets.is_empty:
            entry = self._secrets.redact_obj(entry)
        line = (entry.model_dump_json() + "\n").encode("utf-8")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o600)
        except FileNotFoundError:  # the first entry (or the directory was removed): make it then only
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            written = os.write(fd, line)
            while written < len(line):  # a regular file takes it whole; this is belt and braces
                written += os.write(fd, line[written:])
        finally:
            os.close(fd)  # closing releases the lock
        return entry

    def record(
        self,
        *,
        workflow_id: str,
        turn: int,
        tool: str,
        arguments: dict[str, Any],
        result: ToolOutcome,
        duration_ms: int,
    ) -> AuditEntry:
        """Append the entry for one finished tool call."""
        return self.append(
            AuditEntry(
                time=utc_now(),
                workflow_id=workflow_id,
                turn=turn,
                tool=tool,
                arguments=arguments,
                status=result.status,
                exit_code=result.exit_code,
                duration_ms=duration_ms,
                truncated=result.truncated,
            )
        )


__all__ = ["AUDIT_FILE", "AuditEntry", "AuditLog", "default_audit_path", "utc_now"]
