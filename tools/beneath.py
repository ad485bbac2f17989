"""Opening files beneath a directory without ever following a symlink: the one way the file
and memory tools touch the workspace, so nothing swapped in between a check and an open
can lead them out of it."""

from __future__ import annotations

import errno
import os
import stat


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
