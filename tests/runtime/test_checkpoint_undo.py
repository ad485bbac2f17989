"""Every in-workspace change can be undone: a destructive command run by the shell tool after
a checkpoint, then a restore, leaves the workspace as it was, byte for byte: contents,
permissions, symlinks, empty directories, ignored files and the workspace's own ``.git``."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from runtime.checkpoint_scan import RACY_NS, LeftOut, Limits
from runtime.checkpoints import Checkpoints
from tests import sandboxing
from tests.configured import tool_context

LIMITS = Limits(file_bytes=64 * 1024, total_bytes=2**30)
BIG = 256 * 1024  # over the per-file limit: kept outside git

Entry = tuple[int, bytes | str | None]


def snapshot(root: Path) -> dict[str, Entry]:
    """Every path below ``root``, ``.git`` and empty directories included: its mode, and
    its bytes (a file) or target (a symlink)."""
    found: dict[str, Entry] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            st = path.lstat()
            kind = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None if stat.S_ISDIR(st.st_mode) \
                else path.read_bytes()
            found[str(path.relative_to(root))] = (st.st_mode, kind)
    return found


def make_workspace(root: Path) -> None:
    """A repository with a commit, staged and unstaged changes, ignored files (a build
    directory, node_modules, .env), a symlink, an empty directory, odd permissions and a file
    over the per-file limit."""
    script = f"""
        git init -q && git config user.name t && git config user.email t@localhost
        mkdir -p src/pkg empty node_modules/dep build && printf 'build/\\nnode_modules/\\n.env\\n' > .gitignore
        head -c 8192 /dev/urandom > f && echo 'print(1)' > src/pkg/mod.py && echo tracked > tracked.txt
        printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod 755 run.sh && ln -s src/pkg/mod.py link
        git add -A && git commit -qm first && echo staged >> tracked.txt && git add tracked.txt
        echo unstaged >> src/pkg/mod.py && echo SECRET=1 > .env && chmod 600 .env
        echo 'module.exports = 1' > node_modules/dep/index.js && head -c 100 /dev/urandom > build/out.o
        head -c {BIG} /dev/urandom > big.bin
    """
    subprocess.run(script, shell=True, cwd=root, check=True)


COMMANDS = [
    "rm f",
    "unlink f",
    'mv f "$(mktemp -d)/"',
    "tee f </dev/null",
    "sort -o f /dev/null",
    "fallocate --punch-hole -o 0 -l 4096 f",
    "chmod 777 f && ln -sfn /etc link && rmdir empty",
    "git clean -fdx",
    "git commit -qam second && git reset -q --hard HEAD~1",
    "python3 -c \"import shutil; shutil.rmtree('src'); shutil.rmtree('node_modules'); shutil.rmtree('.git/refs')\"",
    "truncate -s 0 big.bin",
    "fallocate --punch-hole -o 0 -l 65536 big.bin",
    "echo new > new.txt && mkdir -p made/deep && echo x > made/deep/y",
]


@pytest.mark.parametrize("command", COMMANDS)
async def test_a_destructive_command_is_undone_byte_for_byte(command: str, workspace: Path, tmp_path: Path):
    make_workspace(workspace)
    checkpoints = Checkpoints(tmp_path / "checkpoints", LIMITS)
    before = snapshot(workspace)
    commit = checkpoints.save(workspace, "task", 1)
    assert checkpoints.left_out(workspace, commit) == []

    # Approved, as a person approves each of these when asked (and so the placeholder of a
    # missing control path, which `git clean -x` would trip over, is not there).
    result = await sandboxing.run(tool_context(workspace, approved=True), command)
    assert result.exit_code == 0, result.content
    assert snapshot(workspace) != before

    assert checkpoints.restore(workspace, commit) == []
    assert snapshot(workspace) == before


async def test_a_large_file_past_the_budget_is_named_and_left_as_it_is(workspace: Path, tmp_path: Path):
    """The budget holds one save's copies: the file over the per-file limit does not fit, so
    the checkpoint names it (the tool's result says so) and a restore leaves it alone."""
    make_workspace(workspace)
    checkpoints = Checkpoints(tmp_path / "checkpoints", Limits(file_bytes=64 * 1024, total_bytes=128 * 1024))
    commit = checkpoints.save(workspace, "task", 1)
    assert checkpoints.left_out(workspace, commit) == [LeftOut("big.bin", BIG)]

    await sandboxing.run(tool_context(workspace), "truncate -s 0 big.bin && rm f")
    assert checkpoints.restore(workspace, commit) == [LeftOut("big.bin", BIG)]
    assert (workspace / "big.bin").stat().st_size == 0 and (workspace / "f").stat().st_size == 8192


async def test_a_large_file_unchanged_between_saves_is_stored_once(workspace: Path, tmp_path: Path):
    make_workspace(workspace)
    checkpoints = Checkpoints(tmp_path / "checkpoints", LIMITS)
    checkpoints.save(workspace, "task", 1)  # made just now: its stat cannot be trusted yet
    time.sleep(RACY_NS / 1e9)
    checkpoints.save(workspace, "task", 2)
    checkpoints.save(workspace, "task", 3)
    assert len(list((checkpoints.repo(workspace) / "large").iterdir())) == 2
