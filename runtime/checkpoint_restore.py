"""Writing a checkpoint back onto a directory, byte for byte: contents, permissions,
symlinks as symlinks, empty directories, the workspace's ``.git``; every path the
checkpoint does not hold is removed, but for the files it left out (it does not know what
they held, so they stay as they are).

Files are replaced, never written in place: a file is unlinked and made anew, so a
read-only file (git's objects) is no obstacle and a hard link elsewhere keeps its bytes.
Directories are made writable while the restore runs and get their permissions last.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from runtime.checkpoint_scan import Snapshot, clone_or_copy, unescape, walk
from runtime.shadow_git import CheckpointError, ShadowGit

FILES = "files/"
MANIFEST = "manifest"


def read_snapshot(git: ShadowGit, commit: str) -> Snapshot:
    """What the checkpoint ``commit`` holds (its left-out files are in its message)."""
    blobs: dict[str, tuple[int, str]] = {}
    manifest: bytes | None = None
    for record in git.run("ls-tree", "-r", "-z", "--full-tree", commit).split(b"\0"):
        if not record:
            continue
        meta, raw = record.split(b"\t", 1)
        mode, _, sha = meta.decode().split()
        path = os.fsdecode(raw)
        if path == MANIFEST:
            manifest = git.run("cat-file", "blob", sha)
        elif path.startswith(FILES):
            blobs[unescape(path[len(FILES):])] = (int(mode, 8), sha)
    if manifest is None:
        raise CheckpointError(f"checkpoint {commit[:10]} was made by an earlier version, which did not record "
                              "the whole workspace: it is not restored")
    return Snapshot.from_manifest(manifest, blobs)


def _kind(mode: int) -> str:
    return "dir" if stat.S_ISDIR(mode) else "link" if stat.S_ISLNK(mode) else "file" if stat.S_ISREG(mode) else "other"


def _wanted_kind(target: Snapshot, path: str) -> str | None:
    if path in target.dirs:
        return "dir"
    if path in target.large:
        return "file"
    if path in target.blobs:
        return "link" if target.blobs[path][0] == 0o120000 else "file"
    return None


def write_snapshot(root: Path, git: ShadowGit, target: Snapshot, keep: frozenset[str]) -> None:
    """Make ``root`` hold exactly ``target``; the paths in ``keep`` (and the directories
    above them) are left as they are."""
    current = dict(walk(root))
    kept_dirs = {p.rsplit("/", i)[0] for p in keep for i in range(1, p.count("/") + 1)}
    for path, st in current.items():  # writable while the restore runs: set back at the end
        if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o700 != 0o700:
            os.chmod(root / path, stat.S_IMODE(st.st_mode) | 0o700)
    survivors: dict[str, os.stat_result] = {}
    for path in sorted(current, reverse=True):  # a directory's contents before it
        st = current[path]
        if path in keep or path in kept_dirs or _wanted_kind(target, path) == _kind(st.st_mode):
            survivors[path] = st
        elif stat.S_ISDIR(st.st_mode):
            os.rmdir(root / path)
        else:
            os.unlink(root / path)
    for path in sorted(target.dirs):
        if path not in survivors:
            os.mkdir(root / path, 0o700)
    with git.blobs() as blobs:
        for path, (mode, sha) in target.blobs.items():
            data = blobs.read(sha)
            full = root / path
            if mode == 0o120000:
                if path in survivors and os.readlink(full) == os.fsdecode(data):
                    continue
                full.unlink(missing_ok=True)
                os.symlink(os.fsdecode(data), full)
                continue
            perm = target.modes.get(path, 0o755 if mode == 0o100755 else 0o644) & 0o777
            if path in survivors and survivors[path].st_size == len(data) and full.read_bytes() == data:
                if stat.S_IMODE(survivors[path].st_mode) != perm:
                    os.chmod(full, perm)
                continue
            full.unlink(missing_ok=True)
            fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                os.fchmod(out.fileno(), perm)
    for path, (name, _, perm) in target.large.items():
        full = root / path
        full.unlink(missing_ok=True)
        clone_or_copy(git.repo / "large" / name, full, may_copy=True)
        os.chmod(full, perm & 0o777)
    for path in sorted(target.dirs, reverse=True):
        os.chmod(root / path, target.dirs[path] & 0o1777)
