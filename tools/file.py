"""The ``file`` tool: read, write, edit, list and grep inside the workspace.

Every path is resolved (symlinks followed) and refused if it lands outside the workspace,
and then opened beneath it without following any symlink (``tools.beneath``), so ``..``,
outside absolute paths and symlinks pointing out all fail the same way, even one swapped
in after the check. The actions themselves, text caps and images included, are in
``tools.file_actions``; this module is what the model sees and how a call is classified.
The work is blocking file I/O, so it runs in a thread.
"""

from __future__ import annotations

import asyncio
import posixpath
from pathlib import Path
from typing import Literal, assert_never

from pydantic import model_validator

from core.permissions import RULES_FILE
from tools import control_paths
from tools.base import Danger, Field, StrictArgs, ToolContext, ToolDefinition, ToolOutcome
from tools.beneath import Refused, resolve_beneath
from tools.file_actions import edit_file, grep, list_dir, read_file, write_file
from tools.shell import OUTPUT_CAP_CHARS

WRITES = ("write", "edit")
DESCRIPTION = f"""\
Work with files in the workspace.
Paths are relative to the workspace; paths outside it are refused.
- read: the text of a file; offset (1-based first line) and limit (number of lines) select a part.
  Output over {OUTPUT_CAP_CHARS} characters is cut; read the rest with offset/limit.
  A PNG, JPEG, GIF or WebP image comes back as the image, when the model takes images.
- write: create or overwrite a file with content (parent directories are created).
- edit: replace the exact string old with new. old must occur exactly once unless
  replace_all is true: include enough surrounding text to make it unique, whitespace included.
- list: the entries of a directory (directories end with /).
- grep: search a file or directory tree for a Python regex pattern; prints path:line:text.
Control files (.agent/, .git/hooks, .git/config, .envrc, .vscode/, a virtualenv's activate
scripts and site-packages...) are written only in a call the person approved.
"""


class FileArgs(StrictArgs):
    action: Literal["read", "write", "edit", "list", "grep"]
    path: str = Field(".", description="File or directory, relative to the workspace.")
    content: str | None = Field(None, description="write: the full new content of the file.")
    old: str | None = Field(None, description="edit: the exact text to replace.")
    new: str | None = Field(None, description="edit: the replacement text.")
    replace_all: bool = Field(False, description="edit: replace every occurrence of old.")
    pattern: str | None = Field(None, description="grep: a Python regular expression.")
    offset: int | None = Field(None, ge=1, description="read: first line to return, 1-based.")
    limit: int | None = Field(None, ge=1, description="read: number of lines to return.")

    @model_validator(mode="after")
    def _needs_its_fields(self) -> FileArgs:
        needed = {"write": ("content",), "edit": ("old", "new"), "grep": ("pattern",)}
        missing = [f for f in needed.get(self.action, ()) if getattr(self, f) is None]
        if missing:
            raise ValueError(f"action {self.action!r} needs {' and '.join(missing)}")
        return self


def _run(args: FileArgs, workspace: Path, approved: bool = False) -> ToolOutcome:
    root = workspace.resolve()
    try:
        path = resolve_beneath(root, args.path)
        control = control_paths.named(path.relative_to(root).parts) if args.action in WRITES else None
        if control is not None and not approved:
            raise Refused(control_paths.refusal(args.path, control))
        match args.action:
            case "read":
                return read_file(root, path, args.path, args.offset, args.limit)
            case "write":
                assert args.content is not None
                return write_file(root, path, args.path, args.content)
            case "edit":
                assert args.old is not None and args.new is not None
                return edit_file(root, path, args.path, args.old, args.new, args.replace_all)
            case "list":
                return list_dir(root, path, args.path)
            case "grep":
                assert args.pattern is not None
                return grep(root, path, args.path, args.pattern)
            case _:
                assert_never(args.action)
    except Refused as exc:
        return ToolOutcome(status="error", content=str(exc))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return ToolOutcome(status="error", content=f"{args.action} {args.path!r} failed: {reason}")


async def file_tool(args: FileArgs, ctx: ToolContext) -> ToolOutcome:
    return await asyncio.to_thread(_run, args, ctx.workspace, ctx.approved)


def classify(args: FileArgs) -> Danger | tuple[Danger, str]:
    """Reads are SAFE, writes MODERATE; a write to a control file asks, by its name (the handler
    refuses it unless this exact call was approved)."""
    if args.action not in WRITES:
        return Danger.SAFE
    path = posixpath.normpath(args.path)
    if path.endswith(RULES_FILE):
        return Danger.DANGEROUS, f"changes the standing permission rules ({RULES_FILE})"
    control = control_paths.named(tuple(p for p in path.split("/") if p not in ("", ".")))
    if control is not None:
        return Danger.DANGEROUS, f"writes {path} ({control.why})"
    return Danger.MODERATE


TOOL = ToolDefinition(
    name="file",
    description=DESCRIPTION,
    args_model=FileArgs,
    handler=file_tool,
    danger=Danger.MODERATE,
    idempotent=True,
    local=lambda args: args.action in ("read", "list"),  # grep may walk a large tree: an activity
    read_only=lambda args: args.action in ("read", "list", "grep"),
    parallel=True,
    classify=classify,
    compact_keys=("action", "path"),
    untrusted_source=lambda args: (
        f"file {args.get('action')}: {args.get('path', '.')}" if args.get("action") in ("read", "grep") else None
    ),
)
