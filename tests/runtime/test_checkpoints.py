"""Workspace checkpoints: tasks sharing a workspace save into one repository, one at a time;
files over the size limit are left out (git never reads them), listed, and never deleted."""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from core.settings import CheckpointSettings
from runtime.checkpoints import Checkpoints, LeftOut, max_file_bytes

MAX_FILE_ENV = "AGENT_CHECKPOINT_MAX_FILE_MB"

ROOT = Path(__file__).resolve().parents[2]


def test_concurrent_saves_of_one_workspace_all_succeed(tmp_path: Path):
    """Eight threads here and a second process at once, on a workspace that has no repository
    yet: the first `git init` and git's index would race without the lock (a worker's tool
    call failed with a traceback before it)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a")
    root = tmp_path / "checkpoints"
    other = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from runtime.checkpoints import Checkpoints; "
         "c = Checkpoints(Path(sys.argv[1])); [c.save(Path(sys.argv[2]), 'other', t) for t in range(8)]",
         str(root), str(workspace)], cwd=ROOT)
    checkpoints = Checkpoints(root)
    with ThreadPoolExecutor(8) as pool:
        commits = list(pool.map(lambda turn: checkpoints.save(workspace, f"task-{turn}", turn), range(8)))
    assert other.wait(60) == 0
    assert len(commits) == 8 and all(len(c) == 40 for c in commits)
    assert checkpoints.turns(workspace, "other").keys() == set(range(8))
    assert {t: c for t, c in checkpoints.turns(workspace, "task-3").items()} == {3: commits[3]}


def tree(checkpoints: Checkpoints, workspace: Path, commit: str) -> set[str]:
    return set(checkpoints._git(workspace, "ls-tree", "-r", "-z", "--name-only", commit).decode().split("\0")) - {""}


def test_a_sparse_image_and_random_bytes_are_left_out_of_the_next_checkpoint(tmp_path: Path, capsys):
    """A command wrote a 4 GiB sparse file and 100 MB of random bytes: git never reads them
    (they are not in the commit, no blob of them is stored) and the checkpoint lists them.
    The time the save took is printed (``-s``), not asserted: benchmarks/checkpoint_budget.py."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("notes")
    checkpoints = Checkpoints(tmp_path / "checkpoints")  # the default limit: 10 MB
    checkpoints.save(workspace, "task", 1)
    subprocess.run("truncate -s 4G big.img && head -c 100M /dev/urandom > r.bin && echo 2 > two.txt",
                   shell=True, cwd=workspace, check=True)
    started = time.perf_counter()
    commit = checkpoints.save(workspace, "task", 2)
    took = time.perf_counter() - started
    assert tree(checkpoints, workspace, commit) == {"notes.md", "two.txt"}
    assert checkpoints.left_out(workspace, commit) == [
        LeftOut("big.img", 4 * 2**30, sparse=True), LeftOut("r.bin", 100 * 2**20, sparse=False)]
    stored = sum(f.stat().st_size for f in (checkpoints.repo(workspace) / "objects").rglob("*") if f.is_file())
    assert stored < 2**20
    with capsys.disabled():
        print(f"\ncheckpoint after a 4 GiB sparse file and 100 MB of random bytes: {took * 1000:.0f} ms")


def test_a_tracked_file_that_grows_past_the_limit_leaves_the_checkpoint_and_comes_back_when_it_shrinks(
    tmp_path: Path,
):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    log = workspace / "run.log"
    log.write_text("short")
    checkpoints = Checkpoints(tmp_path / "checkpoints", max_file_bytes=1000)
    assert tree(checkpoints, workspace, checkpoints.save(workspace, "task", 1)) == {"run.log"}
    log.write_text("x" * 2000)  # tracked now: excluding it alone would not stop git hashing it
    grown = checkpoints.save(workspace, "task", 2)
    assert tree(checkpoints, workspace, grown) == set()
    assert checkpoints.left_out(workspace, grown) == [LeftOut("run.log", 2000)]
    log.write_text("short again")
    shrunk = checkpoints.save(workspace, "task", 3)
    assert tree(checkpoints, workspace, shrunk) == {"run.log"} and checkpoints.left_out(workspace, shrunk) == []


def test_a_new_large_file_alone_makes_a_checkpoint_of_its_own(tmp_path: Path):
    """The tree is the same, but the list of what was left out is not: each checkpoint's own."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a")
    checkpoints = Checkpoints(tmp_path / "checkpoints", max_file_bytes=1000)
    first = checkpoints.save(workspace, "task", 1)
    (workspace / "big.bin").write_bytes(b"\1" * 2000)
    second = checkpoints.save(workspace, "task", 2)
    assert second != first and checkpoints.left_out(workspace, first) == []
    assert checkpoints.left_out(workspace, second) == [LeftOut("big.bin", 2000)]
    assert checkpoints.save(workspace, "task", 3) == second  # nothing changed since


def test_only_the_large_file_is_left_out_whatever_its_name(tmp_path: Path):
    """Names with gitignore's special characters are escaped: ``a*b [1]?`` does not match ``aXb [1]x``."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    names = ["a*b [1]? ", "#x", "!y", "back\\slash"]
    for name in names:
        (workspace / name).write_bytes(b"\1" * 2000)
    (workspace / "aXb [1]x ").write_text("small")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "a*b [1]? ").write_text("small, in another directory")
    checkpoints = Checkpoints(tmp_path / "checkpoints", max_file_bytes=1000)
    commit = checkpoints.save(workspace, "task", 1)
    assert tree(checkpoints, workspace, commit) == {"aXb [1]x ", "sub/a*b [1]? "}
    assert [f.path for f in checkpoints.left_out(workspace, commit)] == sorted(names)


def test_restoring_never_deletes_a_file_left_out(tmp_path: Path):
    """A file over the limit now, or left out of the checkpoint restored (its content then is
    unknown), stays as it is; files made since that were recorded are removed."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a")
    checkpoints = Checkpoints(tmp_path / "checkpoints", max_file_bytes=1000)
    before = checkpoints.save(workspace, "task", 1)
    (workspace / "big.bin").write_bytes(b"\1" * 2000)
    (workspace / "dump.bin").write_bytes(b"\2" * 2000)
    (workspace / "b.txt").write_text("b")
    middle = checkpoints.save(workspace, "task", 2)
    (workspace / "dump.bin").write_bytes(b"\2" * 10)  # small now, and recorded: not so in `middle`
    checkpoints.save(workspace, "task", 3)

    kept = checkpoints.restore(workspace, middle)
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt", "b.txt", "big.bin", "dump.bin"]
    assert (workspace / "dump.bin").read_bytes() == b"\2" * 10
    assert [f.path for f in kept] == ["big.bin", "dump.bin"]

    assert [f.path for f in checkpoints.restore(workspace, before)] == ["big.bin"]
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt", "big.bin"]  # dump.bin was recorded
    assert (workspace / "big.bin").read_bytes() == b"\1" * 2000


def test_the_limit_comes_from_the_settings():
    assert max_file_bytes(CheckpointSettings()) == 10 * 2**20
    assert max_file_bytes(CheckpointSettings.from_env({MAX_FILE_ENV: "0.5"})) == 2**19
    with pytest.raises(ValueError, match=MAX_FILE_ENV):
        CheckpointSettings.from_env({MAX_FILE_ENV: "lots"})


def test_the_diff_since_a_checkpoint_shows_changed_and_created_files_but_not_the_large_ones(tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("one\n")
    checkpoints = Checkpoints(tmp_path / "checkpoints", max_file_bytes=1000)
    commit = checkpoints.save(workspace, "task", 1)
    (workspace / "notes.md").write_text("two\n")
    (workspace / "new.txt").write_text("fresh\n")
    (workspace / "big.bin").write_bytes(b"x" * 2000)
    diff = checkpoints.diff(workspace, commit)
    assert "-one\n+two" in diff and "+fresh" in diff and "big.bin" not in diff
    assert checkpoints.diff(workspace, checkpoints.save(workspace, "task", 2)) == ""
