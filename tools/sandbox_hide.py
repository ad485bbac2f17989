"""What a sandboxed command must not see, hidden in its child before bubblewrap starts.

The sandbox hides the host's secrets and the worker's files (``tools/sandbox.py``): an empty
read-only directory over each directory, ``/dev/null`` over each file, with what the command
may read shown again inside them (``AGENT_SANDBOX_READABLE``, the workspace). Done by bwrap,
each hide is a mount whose flags bwrap sets by reading the whole mount table again (a tmpfs,
then ``--remount-ro``): 8 hides here, ~2.5 ms of the ~10 ms bwrap adds to ``true``, and more
on a host with more secrets. So a worker that may make mount namespaces makes the hides in the
command's child, between fork and exec (``Hiding.enter``): a mount namespace of its own, no
longer shared with the host's (``MS_SLAVE``: nothing mounted in it reaches the host), the
same mounts made by plain system calls, each read-only once what it shows again is in. bwrap
then starts there, and its read-only copy of ``/`` holds the hides as they are, read-only and
``nosuid``/``nodev`` with the rest. What is shown again inside a hide is bound from a
descriptor opened before it was hidden. Where the child may not make a namespace (no
``CAP_SYS_ADMIN``), bwrap makes the same mounts itself (``Hiding.bwrap_args``).
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import stat
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_SLAVE = 1, 2, 4, 32, 4096, 16384, 1 << 19
_LIBC = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Hiding:
    """One command's hides (resolved paths), and what is shown again inside them."""

    workspace: str
    hides: tuple[tuple[str, bool], ...]  # (path, is a directory)
    shown: tuple[str, ...]  # readable paths inside a hide, shown again read-only

    def covers(self, path: str) -> bool:
        """``path`` (resolved) is in or under a hide."""
        return any(_inside(path, hide) for hide, _ in self.hides)

    def bwrap_args(self) -> list[tuple[str, int, list[str]]]:
        """(path, order, bwrap arguments) for bwrap to make them: the hides (0), then the paths
        shown again (1), which take a hide's place if they are the same path."""
        found = [(path, 0, ["--tmpfs", path] if is_dir else ["--ro-bind", "/dev/null", path])
                 for path, is_dir in self.hides]
        return found + [(path, 1, ["--ro-bind-try", path, path]) for path in self.shown]

    def dirs(self) -> list[str]:
        """The hidden directories (bwrap makes them read-only last)."""
        return [path for path, is_dir in self.hides if is_dir]


def hiding(workspace: str, private: Iterable[str], hidden: Iterable[str], readable: Iterable[str]) -> Hiding:
    """The hides for a command in ``workspace`` (resolved): ``private`` (patterns of the host's
    secrets) and ``hidden`` (the worker's files) that exist, but never the workspace itself;
    ``readable`` paths inside them shown again. Each path stat'ed once: this runs before every
    command."""
    hides: dict[str, bool] = {}
    paths = [p for pattern in private for p in (glob.glob(pattern) if "*" in pattern else [pattern])]
    for path in [*paths, *hidden]:
        try:
            is_dir = stat.S_ISDIR(os.stat(path).st_mode)  # most of them are not there
        except OSError:
            continue  # nothing there to hide
        real = os.path.realpath(path)
        if real != workspace and real not in hides:
            hides[real] = is_dir
    found = Hiding(workspace, tuple(hides.items()), ())
    shown = {real for real in map(os.path.realpath, readable) if real != workspace and found.covers(real)}
    return Hiding(workspace, found.hides, tuple(sorted(shown)))


def early(box: Hiding, needed: Iterable[str]) -> Callable[[], None]:
    """What the command's child runs before exec to make ``box``'s hides; ``needed`` are the
    other paths bwrap binds from the host (the workspace, the proxy's socket), shown again when
    a hide covers them."""
    ops = [("dir" if is_dir else "file", path) for path, is_dir in box.hides]
    ops += [("shown", path) for path in box.shown] + [("bound", path) for path in needed if box.covers(path)]
    ops.sort(key=lambda op: _depth(op[1]))  # a parent before what is inside it
    return lambda: _make(ops)


def _make(ops: list[tuple[str, str]]) -> None:
    """In the child: a mount namespace of its own, then each mount of ``ops``. What is shown
    again is opened first, in the new namespace (a bind's source must be in it), as it is
    before any hide."""
    if _LIBC.unshare(CLONE_NEWNS) != 0:
        _fail("unshare")
    _mount(None, "/", MS_REC | MS_SLAVE)  # first: nothing below may reach the host's namespace
    sources: dict[str, int] = {}
    for kind, path in ops:
        if kind in ("shown", "bound"):
            with contextlib.suppress(OSError):  # as --ro-bind-try: nothing there to show
                sources[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
    for kind, path in ops:
        if kind == "dir":
            _mount("tmpfs", path, MS_NOSUID | MS_NODEV, b"tmpfs", b"mode=0755")
        elif kind == "file":
            _mount("/dev/null", path, MS_BIND)
        elif path in sources:
            source = f"/proc/self/fd/{sources[path]}"
            if os.path.isdir(source):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
            _mount(source, path, MS_BIND | MS_REC)
    for kind, path in ops:  # the workspace ("bound") stays writable: bwrap binds it writable
        if kind in ("dir", "file") or path in sources and kind == "shown":
            _mount(None, path, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _mount(source: str | None, target: str, flags: int, fstype: bytes | None = None, data: bytes | None = None) -> None:
    if _LIBC.mount(source and source.encode(), target.encode(), fstype, flags, data) != 0:
        _fail(f"mount {target}")


def _fail(what: str) -> None:
    err = ctypes.get_errno()
    raise OSError(err, f"{what}: {os.strerror(err)}")


def available() -> bool:
    """Whether a command's child may make its hides here (a namespace of its own, as root)."""
    try:
        done = subprocess.run(["/bin/true"], preexec_fn=lambda: _make([]), check=False, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _inside(path: str, parent: str) -> bool:
    """``path`` is ``parent`` or below it (both resolved)."""
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _depth(path: str) -> int:
    """How many components ``path`` (resolved, absolute) has: a parent's is smaller."""
    return 0 if path == "/" else path.count("/")
