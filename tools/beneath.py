"""Opening files beneath a directory without ever following a symlink: the one way the file
and memory tools touch the workspace, so nothing swapped in between a check and an open
can lead them out of it.

The file tool's paths take two steps: ``resolve_beneath`` resolves the path the model gave
(symlinks followed) and refuses it if it lands outside the workspace, so ``..``, outside
absolute paths and symlinks pointing out all fail the same way; ``open_beneath`` then makes
the check hold at use, opening one component at a time from the root with ``O_NOFOLLOW``
(``open_at``), so a symlink swapped in after the check is refused, and creating missing
parent directories the same way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO, Literal


class Refused(Exception):
    """A request a tool turns down; the message goes to the model as an error."""


DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_at(dir_fd: int, name: str, flags: int, *, shown: str | None = None) -> int:
    """``name`` in the directory ``dir_fd``, opened with O_NOFOLLOW; a symlink is refused
    (naming the path as ``shown``), any other failure is the OSError itself."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
    except OSError as exc:
        # O_NOFOLLOW on a symlink fails with ELOOP, or ENOTDIR together with O_DIRECTORY.
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode):
            raise Refused(f"path {shown or name!r} passes through a symlink; refused") from None
        raise


def resolve_beneath(root: Path, raw: str) -> Path:
    target = (root / raw).resolve()
    if not target.is_relative_to(root):
        raise Refused(f"path {raw!r} is outside the workspace")
    return target


def open_beneath(root: Path, path: Path, raw: str, flags: int, *, make_parents: bool = False) -> int:
    """Open the already resolved ``path`` walking down from ``root`` without following
    any symlink, so nothing swapped in since ``resolve_beneath`` can lead out of the workspace."""
    parts = path.relative_to(root).parts
    fd = os.open(root, DIR_FLAGS)
    try:
        for part in parts[:-1]:
            try:
                child = open_at(fd, part, DIR_FLAGS, shown=raw)
            except FileNotFoundError:
                if not make_parents:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
                child = open_at(fd, part, DIR_FLAGS, shown=raw)
            os.close(fd)
            fd = child
        return open_at(fd, parts[-1] if parts else ".", flags, shown=raw)
    finally:
        os.close(fd)


def open_file(root: Path, path: Path, raw: str, mode: Literal["rb", "r+b"]) -> BinaryIO:
    """A regular file opened beneath ``root`` (O_NONBLOCK so a FIFO cannot hang the open)."""
    flags = (os.O_RDONLY if mode == "rb" else os.O_RDWR) | os.O_NONBLOCK
    fd = open_beneath(root, path, raw, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refused(f"{raw!r} is not a regular file")
    return os.fdopen(fd, mode)


def refuse_symlink(root: Path, raw: str) -> None:
    if (root / raw).is_symlink():
        raise Refused(f"{raw!r} is a symlink; refusing to write through it, use its target")
