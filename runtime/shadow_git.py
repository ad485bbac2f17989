"""The git that runs a checkpoint repository: a bare repository outside the workspace,
with no configuration of the host or the workspace's (its attributes, filters, hooks and
ignore rules never apply: checkpoints hash bytes as they are and build their trees
themselves)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

GIT_TIMEOUT_S = 120


class CheckpointError(Exception):
    pass


class ShadowGit:
    def __init__(self, repo: Path) -> None:
        self.repo = repo

    def _command(self, args: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
        cmd = [
            shutil.which("git") or "git", f"--git-dir={self.repo}",
            "-c", "user.name=durable-agent", "-c", "user.email=agent@localhost", "-c", "gc.auto=0",
            # Names such as ``.git`` are escaped before they reach the index; these checks
            # would otherwise drop NTFS and HFS look-alikes of them without a word.
            "-c", "core.protectNTFS=false", "-c", "core.protectHFS=false",
            *args,
        ]
        env = {"PATH": os.defpath, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(self.repo.parent)}
        return cmd, env

    def run(self, *args: str, stdin: bytes | None = None, index: Path | None = None) -> bytes:
        """git ``args`` in the repository; its output. ``index``: the index file it uses."""
        cmd, env = self._command(args)
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        try:
            done = subprocess.run(cmd, input=stdin, capture_output=True, timeout=GIT_TIMEOUT_S, env=env, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CheckpointError(f"git could not run: {exc}") from None
        if done.returncode != 0:
            raise CheckpointError(done.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed")
        return done.stdout

    def init(self) -> None:
        if not (self.repo / "HEAD").exists():
            try:
                subprocess.run(["git", "init", "-q", "--bare", str(self.repo)], capture_output=True, check=True,
                               timeout=GIT_TIMEOUT_S)
            except (OSError, subprocess.SubprocessError) as exc:
                raise CheckpointError(f"could not create the checkpoint repository {self.repo}: {exc}") from None

    @contextmanager
    def blobs(self) -> Iterator[BlobReader]:
        """One ``cat-file --batch`` for every blob a restore writes, not a process each."""
        cmd, env = self._command(("cat-file", "--batch"))
        with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env) as proc:
            assert proc.stdin is not None and proc.stdout is not None
            try:
                yield BlobReader(proc.stdin, proc.stdout)
            finally:
                proc.stdin.close()


class BlobReader:
    def __init__(self, requests: IO[bytes], replies: IO[bytes]) -> None:
        self._requests, self._replies = requests, replies

    def read(self, sha: str) -> bytes:
        self._requests.write(sha.encode() + b"\n")
        self._requests.flush()
        header = self._replies.readline().split()
        if len(header) != 3:
            raise CheckpointError(f"the checkpoint repository has no object {sha}")
        data = self._replies.read(int(header[2]))
        self._replies.read(1)  # the line break after each object
        return data
