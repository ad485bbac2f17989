"""Workspace checkpoints: a shadow git repository per workspace, outside it.

Before a tool call that may change files runs, the tool activity records the workspace as
it is (``save``): a commit in ``<data dir>/checkpoints/<workspace digest>.git`` (nothing is
written in the workspace itself), and a ref ``refs/agent/<task digest>/turn-<N>`` naming it.
The state at the end of turn N is then the checkpoint taken before the first later change
(``state_after``), and ``restore`` puts it back byte for byte: files changed since are
rewritten, files created since removed, permissions, symlinks, empty directories and the
workspace's own ``.git`` (refs, index, objects) as they were. ``export`` writes a checkpoint
into a new directory (a fork's copy).

Every path is recorded, ignored ones too (``runtime/checkpoint_scan.py`` says how, and how
files over ``AGENT_CHECKPOINT_MAX_FILE_MB`` are kept without being hashed). What a rewind
cannot undo: anything outside the workspace, and the files a checkpoint left out, because
one save would have copied more than ``AGENT_CHECKPOINT_MAX_MB`` or because they are not
regular files. Each checkpoint's commit message lists those; the tool call's result names
them to the model, and a restore leaves them where they are. ``AGENT_CHECKPOINTS=off``
turns checkpoints off.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.settings import CheckpointSettings, PathSettings
from runtime.checkpoint_restore import FILES, MANIFEST, read_snapshot, write_snapshot
from runtime.checkpoint_scan import LeftOut, Limits, Scanner, Snapshot, escape, write_blob
from runtime.paths import data_dir
from runtime.shadow_git import CheckpointError, ShadowGit

LEFT_OUT_HEADER = "Left out (not undoable):"


def limits(settings: CheckpointSettings) -> Limits:
    """The per-file limit (``AGENT_CHECKPOINT_MAX_FILE_MB``) and what one save may copy
    (``AGENT_CHECKPOINT_MAX_MB``), in bytes."""
    return Limits(int(settings.max_file_mb * 2**20), int(settings.max_mb * 2**20))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _parse_left_out(message: str) -> list[LeftOut]:
    _, header, listed = message.partition(f"\n{LEFT_OUT_HEADER}\n")
    if not header:
        return []
    return [LeftOut(*json.loads(line)) for line in listed.splitlines() if line.strip()]


DEFAULT_LIMITS = limits(CheckpointSettings())


class Checkpoints:
    def __init__(self, root: Path, limits: Limits = DEFAULT_LIMITS) -> None:
        self.root = root
        self.limits = limits

    @classmethod
    def from_settings(cls, settings: CheckpointSettings, paths: PathSettings) -> Checkpoints:
        """The data directory's checkpoints, with the limits ``settings`` set."""
        return cls(data_dir(paths) / "checkpoints", limits(settings))

    def repo(self, workspace: Path) -> Path:
        return self.root / f"{_digest(os.path.realpath(workspace))}.git"

    def git(self, workspace: Path) -> ShadowGit:
        return ShadowGit(self.repo(workspace))

    @contextmanager
    def _locked(self, workspace: Path) -> Iterator[ShadowGit]:
        """The workspace's repository, one user at a time (a lock file beside it, for threads
        and worker processes alike): two saves would race on the index and the first init."""
        git = self.git(workspace)
        git.repo.parent.mkdir(parents=True, exist_ok=True)
        with open(git.repo.parent / f"{git.repo.name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            git.init()
            yield git

    def save(self, workspace: Path, task_id: str, turn: int) -> str:
        """Record the workspace before turn ``turn``'s change; the commit id. Tasks that share a
        workspace share its repository (and a commit, when nothing changed in between)."""
        with self._locked(workspace) as git:
            snap = Scanner(git, self.limits).scan(workspace)
            tree = self._tree(git, snap)
            message = f"{task_id} before turn {turn}"
            if snap.left_out:
                message += f"\n\n{LEFT_OUT_HEADER}\n" + "\n".join(
                    json.dumps([f.path, f.size, f.sparse, f.reason]) for f in snap.left_out)
            head, head_tree, left_then = self._head(git)
            if head is not None and head_tree == tree and left_then == snap.left_out:
                commit = head  # nothing changed since the last save
            else:
                parent = ("-p", head) if head else ()
                commit = git.run("commit-tree", tree, *parent, "-m", message).decode().strip()
            refs = f"update HEAD {commit}\nupdate {self._ref(task_id, turn)} {commit}\n"
            git.run("update-ref", "--stdin", stdin=refs.encode())
            return commit

    def _head(self, git: ShadowGit) -> tuple[str | None, str | None, list[LeftOut]]:
        """The last checkpoint's commit, tree and left-out files (one git call: a save's
        cost is mostly processes)."""
        try:
            commit, tree, message = git.run("log", "-1", "--format=%H%x00%T%x00%B", "HEAD").decode(
                "utf-8", "surrogateescape").split("\0", 2)
        except CheckpointError:
            return None, None, []  # no commit yet
        return commit, tree, _parse_left_out(message)

    def _tree(self, git: ShadowGit, snap: Snapshot) -> str:
        """The tree of ``snap``: its blobs under ``files/``, the manifest beside them."""
        index = git.repo / "checkpoint-index"
        index.unlink(missing_ok=True)
        manifest = write_blob(git.repo / "objects", snap.manifest())
        lines = [f"100644 {manifest}\t{MANIFEST}".encode()]
        lines += [b"%o %s\t%s" % (mode, sha.encode(), os.fsencode(FILES + escape(path)))
                  for path, (mode, sha) in snap.blobs.items()]
        git.run("update-index", "-z", "--index-info", stdin=b"\0".join(lines) + b"\0", index=index)
        return git.run("write-tree", index=index).decode().strip()

    def _ref(self, task_id: str, turn: int) -> str:
        return f"refs/agent/{_digest(task_id)}/turn-{turn:06d}"

    def left_out(self, workspace: Path, commit: str) -> list[LeftOut]:
        """The files the checkpoint ``commit`` left out, as its message lists them."""
        return self._left_out(self.git(workspace), commit)

    def _left_out(self, git: ShadowGit, commit: str) -> list[LeftOut]:
        return _parse_left_out(git.run("log", "-1", "--format=%B", commit).decode("utf-8", "surrogateescape"))

    def turns(self, workspace: Path, task_id: str) -> dict[int, str]:
        """Turn -> commit of every checkpoint of a task in this workspace."""
        if not (self.repo(workspace) / "HEAD").exists():
            return {}
        prefix = f"refs/agent/{_digest(task_id)}/"
        out = self.git(workspace).run("for-each-ref", "--format=%(refname) %(objectname)", prefix).decode()
        found: dict[int, str] = {}
        for line in out.splitlines():
            ref, commit = line.split()
            found[int(ref.rsplit("turn-", 1)[1])] = commit
        return found

    def state_after(self, workspace: Path, task_id: str, turn: int) -> str | None:
        """The commit holding the workspace as it was at the end of ``turn``: the checkpoint
        before the first later change. None: nothing changed after that turn."""
        turns = self.turns(workspace, task_id)
        later = sorted(t for t in turns if t > turn)
        return turns[later[0]] if later else None

    def restore(self, workspace: Path, commit: str) -> list[LeftOut]:
        """Make the workspace what it was at ``commit``, byte for byte; the files ``commit``
        left out, which are left as they are (it does not know what they held)."""
        with self._locked(workspace) as git:
            left_out = self._left_out(git, commit)
            write_snapshot(workspace, git, read_snapshot(git, commit), frozenset(f.path for f in left_out))
        return left_out

    def diff(self, workspace: Path, commit: str) -> str:
        """What changed in the workspace since ``commit``, as a unified diff: files created
        since included; the ``.git`` directory and the files over the per-file limit left
        out (the conversation's ``/diff``)."""
        with self._locked(workspace) as git:
            now = self._tree(git, Scanner(git, self.limits).scan(workspace, keep_large=False))
            out = git.run("diff-tree", "-r", "-p", "--no-color", f"--relative={FILES}", commit, now,
                          "--", f":(exclude,glob){FILES}**/.git%/**")
        return out.decode("utf-8", "replace")

    def export(self, workspace: Path, commit: str, dest: Path) -> None:
        """Write the workspace as ``commit`` holds it into ``dest`` (a new directory)."""
        git = self.git(workspace)
        dest.mkdir(parents=True, exist_ok=False)
        write_snapshot(dest, git, read_snapshot(git, commit), frozenset())
