"""What a checkpoint holds of a workspace: every path in it, read by a walk of our own.

Git's ``add`` would skip what the workspace's ``.gitignore`` excludes (node_modules, build
directories, ``.env``), drop any path named ``.git`` (the workspace's own repository, whose
``reset --hard`` or ``clean -fdx`` a rewind must undo), record a nested repository as a bare
commit id, and apply the workspace's ``.gitattributes`` (line-ending conversions). So the
walk here reads every file as bytes and writes each as a git blob itself; the tree is built
from those blobs with ``update-index --index-info`` under ``files/`` (a name such as ``.git``,
which git would silently drop, is escaped), and what a git tree cannot say sits beside it in
``manifest``: every directory (empty ones too) and its permissions, permissions other than
644/755, and the files over the per-file limit.

A file over ``AGENT_CHECKPOINT_MAX_FILE_MB`` is not hashed (a 4 GiB sparse image made a save
take two minutes): it is kept in the repository's ``large/`` store by reflink (``FICLONE``:
instant, and copy-on-write, so a later in-place write such as ``fallocate --punch-hole``
does not reach the kept copy; a hard link would share it), else copied. What one save
copies (bytes not already held: blobs new since the last save and copied large files) is
held to ``AGENT_CHECKPOINT_MAX_MB``; past it, files are left out and named, as are files
that are not regular files, symlinks or directories (fifos, sockets, devices).

Unchanged files are not read again: a stat cache beside the repository maps path and
(size, mtime, ctime, inode) to the blob. A file changed within ``RACY_NS`` of a save is not
cached (a write in the same clock tick would keep its mtime), as git does with racy entries.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import stat
import time
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from runtime.shadow_git import ShadowGit

FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)
RACY_NS = 100_000_000  # well over a clock tick: the coarse clock file times come from
ESCAPED = (".git", ".gitmodules")  # names git's index refuses (silently), in any case


@dataclass(frozen=True)
class LeftOut:
    """A file a checkpoint does not hold, so a rewind cannot undo a change to it: its path in
    the workspace, its size, whether it is sparse (most of it holes), and why."""

    path: str
    size: int
    sparse: bool = False
    reason: str = "over the size budget"

    def describe(self) -> str:
        scale, unit = (2**30, "GiB") if self.size >= 2**30 else (2**20, "MB") if self.size >= 2**20 else (2**10, "KB")
        return f"{self.path} ({self.size / scale:.1f} {unit}{', sparse' if self.sparse else ''}; {self.reason})"


@dataclass(frozen=True)
class Limits:
    file_bytes: int  # larger files are kept by reflink or copy, never hashed
    total_bytes: int  # the most one save copies


@dataclass
class Snapshot:
    """A workspace as one save found it."""

    blobs: dict[str, tuple[int, str]] = field(default_factory=dict)  # path -> (git mode, blob id)
    dirs: dict[str, int] = field(default_factory=dict)  # every directory below the root -> permissions
    modes: dict[str, int] = field(default_factory=dict)  # files whose permissions git's mode does not say
    large: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # path -> (stored as, size, permissions)
    left_out: list[LeftOut] = field(default_factory=list)

    def manifest(self) -> bytes:
        return json.dumps({"dirs": self.dirs, "modes": self.modes, "large": self.large}, sort_keys=True).encode()

    @classmethod
    def from_manifest(cls, data: bytes, blobs: dict[str, tuple[int, str]]) -> Snapshot:
        manifest = json.loads(data)
        return cls(blobs, manifest["dirs"], manifest["modes"], {p: tuple(v) for p, v in manifest["large"].items()})


def escape(path: str) -> str:
    """``path`` as the ``files/`` tree names it: a component git refuses gets a ``%`` more
    (so does one that is such a name with ``%`` already, which keeps the mapping one-to-one)."""
    return "/".join(c + "%" if c.rstrip("%").lower() in ESCAPED else c for c in path.split("/"))


def unescape(path: str) -> str:
    return "/".join(c[:-1] if c.endswith("%") and c.rstrip("%").lower() in ESCAPED else c for c in path.split("/"))


def walk(root: Path, unreadable: list[LeftOut] | None = None) -> Iterator[tuple[str, os.stat_result]]:
    """Every path below ``root`` (relative, ``/``-separated, in sorted order) with its
    ``lstat``; symlinks are not followed. A directory that cannot be listed goes in ``unreadable``."""
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            with os.scandir(os.path.join(root, rel)) as listing:
                found = sorted((e.name, e.stat(follow_symlinks=False)) for e in listing)
        except OSError:
            if unreadable is not None and rel:
                unreadable.append(LeftOut(rel, 0, reason="unreadable"))
            continue
        for name, st in found:
            path = f"{rel}/{name}" if rel else name
            yield path, st
        stack.extend(f"{rel}/{n}" if rel else n for n, st in reversed(found) if stat.S_ISDIR(st.st_mode))


def write_blob(objects: Path, data: bytes) -> str:
    """``data`` as a loose git object (unless it is one already); its id."""
    sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    path = objects / sha[:2] / sha[2:]
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        tmp = path.parent / f"tmp-{uuid.uuid4().hex}"
        tmp.write_bytes(zlib.compress(b"blob %d\0" % len(data) + data, 1))
        os.replace(tmp, path)
    return sha


def clone_or_copy(src: str | Path, dst: str | Path, may_copy: bool) -> Literal["reflink", "copy"] | None:
    """``dst`` made a copy of ``src``: a reflink where the filesystem can, else (if
    ``may_copy``) a byte copy; which it was (None: neither, and ``dst`` is gone)."""
    with open(src, "rb") as source, open(dst, "wb") as target:
        try:
            fcntl.ioctl(target.fileno(), FICLONE, source.fileno())
            return "reflink"
        except OSError:
            pass
    if may_copy:
        shutil.copyfile(src, dst)
        return "copy"
    os.unlink(dst)
    return None


class Scanner:
    """Reads a workspace into ``git``'s repository as a ``Snapshot``."""

    def __init__(self, git: ShadowGit, limits: Limits) -> None:
        self.git, self.limits = git, limits
        self.objects = git.repo / "objects"
        self.store = git.repo / "large"
        self.cache_path = git.repo / "stat-cache.json"

    def scan(self, workspace: Path, keep_large: bool = True) -> Snapshot:
        """The workspace as it is; ``keep_large``: files over the per-file limit are stored
        (else left out: what a diff does, which keeps nothing)."""
        started = time.time_ns()
        try:
            cache: dict[str, list] = json.loads(self.cache_path.read_bytes())
        except (OSError, ValueError):
            cache = {}
        fresh: dict[str, list] = {}
        snap, spent = Snapshot(), 0
        for path, st in walk(workspace, snap.left_out):
            full = os.path.join(workspace, path)
            perm = stat.S_IMODE(st.st_mode)
            key = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
            racy = max(st.st_mtime_ns, st.st_ctime_ns) >= started - RACY_NS
            if stat.S_ISDIR(st.st_mode):
                snap.dirs[path] = perm
            elif stat.S_ISLNK(st.st_mode):
                snap.blobs[path] = (0o120000, write_blob(self.objects, os.fsencode(os.readlink(full))))
            elif not stat.S_ISREG(st.st_mode):
                snap.left_out.append(LeftOut(path, st.st_size, reason="not a regular file"))
            elif st.st_size > self.limits.file_bytes:
                stored = self._keep_large(full, st, racy, keep_large, self.limits.total_bytes - spent)
                if stored is None:
                    snap.left_out.append(_left_out(path, st))
                    continue
                name, copied = stored
                spent += copied
                snap.large[path] = (name, st.st_size, perm)
            else:
                cached = cache.get(path)
                if cached is not None and cached[:4] == key:
                    sha = cached[4]
                elif spent + st.st_size > self.limits.total_bytes:
                    snap.left_out.append(_left_out(path, st))
                    continue
                else:
                    try:
                        sha = write_blob(self.objects, Path(full).read_bytes())
                    except OSError:
                        snap.left_out.append(LeftOut(path, st.st_size, reason="unreadable"))
                        continue
                    spent += st.st_size
                if not racy:
                    fresh[path] = [*key, sha]
                executable = st.st_mode & stat.S_IXUSR
                snap.blobs[path] = (0o100755 if executable else 0o100644, sha)
                if perm != (0o755 if executable else 0o644):
                    snap.modes[path] = perm
        tmp = self.cache_path.with_suffix(f".{uuid.uuid4().hex}")
        tmp.write_text(json.dumps(fresh))
        os.replace(tmp, self.cache_path)
        return snap

    def _keep_large(self, full: str, st: os.stat_result, racy: bool, keep: bool, budget: int) -> tuple[str, int] | None:
        """A file over the per-file limit in the store: (its name there, bytes copied); None
        if it could not be kept. The name comes from its stat, so an unchanged file is kept
        once (a racy one gets a name of its own each time)."""
        if not keep:
            return None
        identity = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
        name = uuid.uuid4().hex if racy else hashlib.sha256(identity.encode()).hexdigest()[:40]
        kept = self.store / name
        if kept.exists():
            return name, 0
        self.store.mkdir(exist_ok=True)
        tmp = self.store / f"tmp-{uuid.uuid4().hex}"
        try:
            how = clone_or_copy(full, tmp, may_copy=st.st_size <= budget)
        except OSError:
            tmp.unlink(missing_ok=True)
            return None
        if how is None:
            return None
        tmp.chmod(0o444)
        os.replace(tmp, kept)
        return name, st.st_size if how == "copy" else 0  # a reflink shares the blocks: no copy


def _left_out(path: str, st: os.stat_result) -> LeftOut:
    return LeftOut(path, st.st_size, sparse=st.st_blocks * 512 < st.st_size // 2)
