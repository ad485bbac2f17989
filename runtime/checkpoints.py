"""Workspace checkpoints: a shadow git repository per workspace, outside it.

Before a tool call that may change files runs, the tool activity records the workspace as
it is (``save``): a commit in ``<data dir>/checkpoints/<workspace digest>.git`` (git's
``--git-dir`` with the workspace as ``--work-tree``, so nothing is written in the workspace
itself), and a ref ``refs/agent/<task digest>/turn-<N>`` naming it. The state at the end of
turn N is then the checkpoint taken before the first later change (``state_after``), and
``restore`` puts it back: files changed since are rewritten, files created since are removed.
``export`` writes a checkpoint into another directory (a fork's copy).

What it cannot undo: anything outside the workspace, files the workspace's own
``.gitignore`` excludes, and files over ``AGENT_CHECKPOINT_MAX_FILE_MB`` (10 MB; a 4 GiB
sparse image or a dump of random bytes made one save take two minutes, as git hashes every
byte). Those are left out: found from git's own list of the files it would add (which
skips ignored directories) with one ``lstat`` each, and named in a file that git reads as
``core.excludesFile``, so git never reads them; a tracked one leaves the index first. Each
checkpoint's commit message lists them, and a restore, to which they are ignored files,
leaves them where they are. ``AGENT_CHECKPOINTS=off`` turns checkpoints off.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from core.settings import CheckpointSettings, PathSettings
from runtime.paths import data_dir

GIT_TIMEOUT_S = 120
LEFT_OUT_HEADER = "Left out (over the size limit):"


class CheckpointError(Exception):
    pass


def max_file_bytes(settings: CheckpointSettings) -> int:
    """The largest file a checkpoint records (``AGENT_CHECKPOINT_MAX_FILE_MB``)."""
    return int(settings.max_file_mb * 1024 * 1024)


@dataclass(frozen=True)
class LeftOut:
    """A file a checkpoint does not hold: its path in the workspace, its size, and whether it
    is sparse (most of it holes, which take no disk but which git would read as zeros)."""

    path: str
    size: int
    sparse: bool = False

    def describe(self) -> str:
        scale, unit = (2**30, "GiB") if self.size >= 2**30 else (2**20, "MB") if self.size >= 2**20 else (2**10, "KB")
        return f"{self.path} ({self.size / scale:.1f} {unit}{', sparse' if self.sparse else ''})"


def _exclude_pattern(path: str) -> bytes:
    """``path`` as an anchored gitignore pattern matching it alone (a line break, which a
    pattern cannot hold, matches as ``?``)."""
    escaped = "".join("\\" + c if c in "\\*?[" else "?" if c in "\r\n" else c for c in path)
    body = escaped.rstrip(" ")
    return os.fsencode("/" + body + "\\ " * (len(escaped) - len(body)))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Checkpoints:
    def __init__(self, root: Path, max_file_bytes: int = max_file_bytes(CheckpointSettings())) -> None:
        self.root = root
        self.max_file_bytes = max_file_bytes

    @classmethod
    def from_settings(cls, settings: CheckpointSettings, paths: PathSettings) -> Checkpoints:
        """The data directory's checkpoints, with the size limit ``settings`` set."""
        return cls(data_dir(paths) / "checkpoints", max_file_bytes(settings))

    def repo(self, workspace: Path) -> Path:
        return self.root / f"{_digest(os.path.realpath(workspace))}.git"

    def _git(self, workspace: Path, *args: str, stdin: bytes | None = None) -> bytes:
        repo = self.repo(workspace)
        cmd = [
            shutil.which("git") or "git", f"--git-dir={repo}", f"--work-tree={os.path.realpath(workspace)}",
            "-c", "user.name=durable-agent", "-c", "user.email=agent@localhost",
            "-c", "core.autocrlf=false", "-c", "gc.auto=0", "-c", "advice.addEmbeddedRepo=false",
            *args,
        ]
        env = {"PATH": os.defpath, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(self.root)}  # git found on ours
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
        left_out = self._stage(workspace)
        message = f"{task_id} before turn {turn}"
        if left_out:
            message += f"\n\n{LEFT_OUT_HEADER}\n" + "\n".join(
                json.dumps([f.path, f.size, f.sparse]) for f in left_out)
        changed = True
        try:
            self._git(workspace, "rev-parse", "-q", "--verify", "HEAD")
            changed = subprocess.run(  # nothing staged: the last commit is this state
                ["git", f"--git-dir={repo}", "diff", "--cached", "--quiet"], capture_output=True, check=False,
                timeout=GIT_TIMEOUT_S,
            ).returncode != 0 or self.left_out(workspace, "HEAD") != left_out
        except CheckpointError:
            pass  # no commit yet
        if changed:
            self._git(workspace, "commit", "-q", "--no-verify", "--allow-empty", "--cleanup=verbatim", "-m", message)
        commit = self._git(workspace, "rev-parse", "HEAD").decode().strip()
        self._git(workspace, "update-ref", self._ref(task_id, turn), commit)
        return commit

    def _stage(self, workspace: Path, keep: frozenset[str] = frozenset()) -> list[LeftOut]:
        """Stage the workspace in the index but the files over the size limit (and the files
        ``keep`` names); those files. Git lists what it would add (tracked, and untracked but
        not ignored: it skips ignored directories); an ``lstat`` of each finds the large ones,
        which are named in the excludes file and taken out of the index, so ``add`` never
        reads them."""
        limit = self.max_file_bytes
        listed = self._git(workspace, "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard")
        left_out: dict[str, LeftOut] = {}
        tracked: list[str] = []
        for item in listed.split(b"\0"):
            if not item:
                continue
            path = os.fsdecode(item[2:])
            try:
                st = os.lstat(os.path.join(workspace, path))
            except OSError:
                continue  # gone since it was tracked
            if stat.S_ISREG(st.st_mode) and (st.st_size > limit or path in keep) and path not in left_out:
                left_out[path] = LeftOut(path, st.st_size, sparse=st.st_blocks * 512 < st.st_size // 2)
                if not item.startswith(b"?"):
                    tracked.append(path)
        excludes = self.repo(workspace) / "info" / "left-out"
        excludes.parent.mkdir(exist_ok=True)
        excludes.write_bytes(b"".join(_exclude_pattern(p) + b"\n" for p in sorted(left_out)))
        if tracked:
            self._git(workspace, "--literal-pathspecs", "rm", "-q", "--cached", "--ignore-unmatch",
                      "--pathspec-from-file=-", "--pathspec-file-nul", stdin=b"\0".join(map(os.fsencode, tracked)))
        self._git(workspace, "-c", f"core.excludesFile={excludes}", "add", "-A", ".")
        return sorted(left_out.values(), key=lambda f: f.path)

    def left_out(self, workspace: Path, commit: str) -> list[LeftOut]:
        """The files the checkpoint ``commit`` left out, as its message lists them."""
        message = self._git(workspace, "log", "-1", "--format=%B", commit).decode("utf-8", "surrogateescape")
        _, header, listed = message.partition(f"\n{LEFT_OUT_HEADER}\n")
        if not header:
            return []
        return [LeftOut(*json.loads(line)) for line in listed.splitlines() if line.strip()]

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

    def restore(self, workspace: Path, commit: str) -> list[LeftOut]:
        """Make the workspace what it was at ``commit``: changed files rewritten, files
        created since removed. Left alone (and returned): the files over the size limit now
        and those ``commit`` left out (it does not know what they held then); ignored files
        too. A file over the limit now that ``commit`` holds gets the content it had then."""
        repo = self.repo(workspace)
        keep = frozenset(f.path for f in self.left_out(workspace, commit))
        with open(repo.parent / f"{repo.name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            left_out = self._stage(workspace, keep)  # the index knows every file there is now
            self._git(workspace, "read-tree", "-u", "--reset", commit)
        return left_out

    def diff(self, workspace: Path, commit: str) -> str:
        """What changed in the workspace since ``commit``, as a unified diff: files created
        since included, files over the size limit left out (the conversation's ``/diff``)."""
        repo = self.repo(workspace)
        with open(repo.parent / f"{repo.name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._stage(workspace)  # the index is the workspace as it is now
            return self._git(workspace, "diff", "--cached", "--no-color", commit).decode("utf-8", "replace")

    def export(self, workspace: Path, commit: str, dest: Path) -> None:
        """Write the files of ``commit`` into ``dest`` (a new directory)."""
        archive = self._git(workspace, "archive", "--format=tar", commit)
        dest.mkdir(parents=True, exist_ok=False)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(dest, filter="data")
