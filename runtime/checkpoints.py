"""Workspace checkpoints: a shadow git repository per workspace, outside it.

Before a tool call that may change files runs, the tool activity records the workspace as
it is (``save``): a commit in ``<data dir>/checkpoints/<workspace digest>.git`` (git's
``--git-dir`` with the workspace as ``--work-tree``, so nothing is written in the workspace
itself), and a ref ``refs/agent/<task digest>/turn-<N>`` naming it. The state at the end of
turn N is then the checkpoint taken before the first later change (``state_after``), and
``restore`` puts it back: files changed since are rewritten, files created since are removed.
``export`` writes a checkpoint into another directory (a fork's copy).

What it cannot undo: anything outside the workspace, and files the workspace's own
``.gitignore`` excludes (they are never recorded). ``AGENT_CHECKPOINTS=off`` turns it off.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path

from runtime.paths import data_dir

ENV = "AGENT_CHECKPOINTS"
GIT_TIMEOUT_S = 120


class CheckpointError(Exception):
    pass


def enabled() -> bool:
    return os.environ.get(ENV, "on").strip().lower() not in ("off", "0", "false", "no")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Checkpoints:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else data_dir() / "checkpoints"

    def repo(self, workspace: Path) -> Path:
        return self.root / f"{_digest(os.path.realpath(workspace))}.git"

    def _git(self, workspace: Path, *args: str, stdin: bytes | None = None) -> bytes:
        repo = self.repo(workspace)
        cmd = [
            "git", f"--git-dir={repo}", f"--work-tree={os.path.realpath(workspace)}",
            "-c", "user.name=durable-agent", "-c", "user.email=agent@localhost",
            "-c", "core.autocrlf=false", "-c", "gc.auto=0", "-c", "advice.addEmbeddedRepo=false",
            *args,
        ]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(self.root)}
        try:
            done = subprocess.run(cmd, input=stdin, capture_output=True, timeout=GIT_TIMEOUT_S, env=env, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CheckpointError(f"git could not run: {exc}") from None
        if done.returncode != 0:
            raise CheckpointError(done.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed")
        return done.stdout

    def _ref(self, task_id: str, turn: int) -> str:
        return f"refs/agent/{_digest(task_id)}/turn-{turn:06d}"

    def save(self, workspace: Path, task_id: str, turn: int) -> str:
        """Record the workspace before turn ``turn``'s change; the commit id. Tasks that share a
        workspace share its repository: one save at a time (a lock file beside it, for threads
        and worker processes alike), or two would race on git's index and its first init."""
        repo = self.repo(workspace)
        repo.parent.mkdir(parents=True, exist_ok=True)
        with open(repo.parent / f"{repo.name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            return self._save(workspace, repo, task_id, turn)

    def _save(self, workspace: Path, repo: Path, task_id: str, turn: int) -> str:
        if not (repo / "HEAD").exists():
            try:
                subprocess.run(["git", "init", "-q", "--bare", str(repo)], capture_output=True, check=True,
                               timeout=GIT_TIMEOUT_S)
            except (OSError, subprocess.SubprocessError) as exc:
                raise CheckpointError(f"could not create the checkpoint repository {repo}: {exc}") from None
        self._git(workspace, "add", "-A", ".")
        changed = True
        try:
            self._git(workspace, "rev-parse", "-q", "--verify", "HEAD")
            changed = subprocess.run(  # nothing staged: the last commit is this state
                ["git", f"--git-dir={repo}", "diff", "--cached", "--quiet"], capture_output=True, check=False,
                timeout=GIT_TIMEOUT_S,
            ).returncode != 0
        except CheckpointError:
            pass  # no commit yet
        if changed:
            self._git(workspace, "commit", "-q", "--no-verify", "--allow-empty", "-m", f"{task_id} before turn {turn}")
        commit = self._git(workspace, "rev-parse", "HEAD").decode().strip()
        self._git(workspace, "update-ref", self._ref(task_id, turn), commit)
        return commit

    def turns(self, workspace: Path, task_id: str) -> dict[int, str]:
        """Turn -> commit of every checkpoint of a task in this workspace."""
        if not (self.repo(workspace) / "HEAD").exists():
            return {}
        prefix = f"refs/agent/{_digest(task_id)}/"
        out = self._git(workspace, "for-each-ref", "--format=%(refname) %(objectname)", prefix).decode()
        found: dict[int, str] = {}
        for line in out.splitlines():
            ref, commit = line.split()
            found[int(ref.rsplit("turn-", 1)[1])] = commit
        return found

    def state_after(self, workspace: Path, task_id: str, turn: int) -> str | None:
        """The commit holding the workspace as it was at the end of ``turn``: the checkpoint
        before the first later change. None: nothing changed after that turn."""
        later = sorted(t for t in self.turns(workspace, task_id) if t > turn)
        return self.turns(workspace, task_id)[later[0]] if later else None

    def restore(self, workspace: Path, commit: str) -> None:
        """Make the workspace what it was at ``commit``: changed files rewritten, files
        created since removed (ignored files are left alone)."""
        self._git(workspace, "add", "-A", ".")  # the index knows every file there is now
        self._git(workspace, "read-tree", "-u", "--reset", commit)

    def export(self, workspace: Path, commit: str, dest: Path) -> None:
        """Write the files of ``commit`` into ``dest`` (a new directory)."""
        archive = self._git(workspace, "archive", "--format=tar", commit)
        dest.mkdir(parents=True, exist_ok=False)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(dest, filter="data")
