"""Setuid and setgid bits off the workspace's files that a command made or changed.

The sandbox's mounts are ``nosuid``, but a file made in the workspace lives on the host's
disk, where ``cp /bin/sh x; chmod 4755 x`` run as root would leave a root shell for anyone
who can reach it. In the sandbox the kernel refuses to set the bits at all (the seccomp
filter of ``tools/sandbox_seccomp.py``); this is the second line, the only one for a command
run unsandboxed (``AGENT_SANDBOX=off``) or where the filter cannot load, and it leaves a
window while the command runs. After each command one walk of the workspace finds the regular files
with either bit whose inode changed since the command started (``st_ctime``, which only the
kernel sets: creating, ``chmod`` and ``cp -p`` all move it), so a workspace that holds a
system's binaries (a root filesystem being built, or ``/`` itself) keeps the bits it had.
A file with one name loses the bits; one with several loses its name in the workspace
instead, since another name may be a system binary whose bit must stay. Directories keep
theirs (``g+s`` on a directory only picks the group of new files). A sandboxed command has
ended when the walk runs, so it does not race the walk.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVILEGE_BITS = stat.S_ISUID | stat.S_ISGID


def strip_setuid(workspace: Path, since: float) -> list[str]:
    """Takes setuid/setgid off the workspace's files changed at or after ``since`` (a
    ``time.time()``); what was changed, as ``tool (setuid removed)``, relative to the workspace."""
    changed: list[str] = []
    stack = [str(workspace)]
    while stack:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                        continue
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode) and info.st_mode & PRIVILEGE_BITS and info.st_ctime >= since:
                    if note := _disarm(entry.path, info):
                        changed.append(f"{os.path.relpath(entry.path, workspace)} ({note})")
    return sorted(changed)


def _disarm(path: str, info: os.stat_result) -> str:
    kind = "setuid" if info.st_mode & stat.S_ISUID else "setgid"
    try:
        if info.st_nlink > 1:
            os.unlink(path)
            return f"{kind}, a hard link: removed"
        os.chmod(path, stat.S_IMODE(info.st_mode) & ~PRIVILEGE_BITS)
        return f"{kind} removed"
    except OSError as err:
        return f"{kind}, could not be removed: {err.strerror}"
