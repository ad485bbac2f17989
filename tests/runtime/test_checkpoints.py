"""Workspace checkpoints: tasks sharing a workspace save into one repository, one at a time;
files over the per-file limit are never hashed (kept by reflink or copy within the budget,
else left out, listed, and never deleted). Undoing commands: test_checkpoint_undo.py."""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from core.settings import CheckpointSettings
from runtime.checkpoint_scan import Limits
from runtime.checkpoints import Checkpoints, LeftOut, limits

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
    """The files a checkpoint holds as git blobs (not those kept outside git)."""
    listed = checkpoints.git(workspace).run("ls-tree", "-r", "-z", "--name-only", commit, "files/").decode()
    return {p.removeprefix("files/") for p in listed.split("\0") if p}


def test_a_sparse_image_past_the_budget_is_left_out_and_random_bytes_kept_outside_git(tmp_path: Path, capsys):
    """A command wrote a 4 GiB sparse file and 100 MB of random bytes: git never reads them
    (no blob of them is stored); the 100 MB are kept by reflink or copy, the 4 GiB image would
    not fit the 1 GiB budget (it is a copy where reflinks are not to be had), so it is listed.
    The time the save took is printed (``-s``), not asserted: benchmarks/checkpoint_budget.py."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("notes")
    checkpoints = Checkpoints(tmp_path / "checkpoints")  # the defaults: 10 MB a file, 1 GiB a save
    checkpoints.save(workspace, "task", 1)
    subprocess.run("truncate -s 4G big.img && head -c 100M /dev/urandom > r.bin && echo 2 > two.txt",
                   shell=True, cwd=workspace, check=True)
    started = time.perf_counter()
    commit = checkpoints.save(workspace, "task", 2)
    took = time.perf_counter() - started
    assert tree(checkpoints, workspace, commit) == {"notes.md", "two.txt"}
    left_out = checkpoints.left_out(workspace, commit)
    assert LeftOut("r.bin", 100 * 2**20) not in left_out
    assert left_out in ([LeftOut("big.img", 4 * 2**30, sparse=True)], [])  # [] where the image was reflinked
    stored = sum(f.stat().st_size for f in (checkpoints.repo(workspace) / "objects").rglob("*") if f.is_file())
    assert stored < 2**20
    with capsys.disabled():
        print(f"\ncheckpoint after a 4 GiB sparse file and 100 MB of random bytes: {took * 1000:.0f} ms")


def test_a_file_that_grows_past_the_limit_is_kept_outside_git_and_comes_back(tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    log = workspace / "run.log"
    log.write_text("short")
    checkpoints = Checkpoints(tmp_path / "checkpoints", Limits(file_bytes=1000, total_bytes=2**20))
    assert tree(checkpoints, workspace, checkpoints.save(workspace, "task", 1)) == {"run.log"}
    log.write_text("x" * 2000)
    grown = checkpoints.save(workspace, "task", 2)
    assert tree(checkpoints, workspace, grown) == set() and checkpoints.left_out(workspace, grown) == []
    log.write_text("short again")
    checkpoints.restore(workspace, grown)
    assert log.read_text() == "x" * 2000


def test_a_new_file_past_the_budget_alone_makes_a_checkpoint_of_its_own(tmp_path: Path):
    """The tree is the same, but the list of what was left out is not: each checkpoint's own."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a")
    checkpoints = Checkpoints(tmp_path / "checkpoints", Limits(file_bytes=1000, total_bytes=1500))
    first = checkpoints.save(workspace, "task", 1)
    (workspace / "big.bin").write_bytes(b"\1" * 2000)
    second = checkpoints.save(workspace, "task", 2)
    assert second != first and checkpoints.left_out(workspace, first) == []
    assert checkpoints.left_out(workspace, second) == [LeftOut("big.bin", 2000)]
    assert checkpoints.save(workspace, "task", 3) == second  # nothing changed since


def test_names_git_refuses_are_recorded_and_restored(tmp_path: Path):
    """``.git`` and ``.gitmodules`` in any case, and names that look like their escapes."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    names = [".git", ".GIT", ".git%", ".gitmodules", "sub/.Git", "line\nbreak", "a*b [1]? ", "%"]
    for name in names:
        (workspace / name).parent.mkdir(exist_ok=True)
        (workspace / name).write_text(name)
    checkpoints = Checkpoints(tmp_path / "checkpoints")
    commit = checkpoints.save(workspace, "task", 1)
    for name in names:
        (workspace / name).write_text("changed")
    checkpoints.restore(workspace, commit)
    assert {name: (workspace / name).read_text() for name in names} == {name: name for name in names}


def test_restoring_never_deletes_a_file_left_out(tmp_path: Path):
    """A file left out of the checkpoint restored (its content then is unknown) stays as it
    is; files made since are removed, those left out of later checkpoints too."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a")
    checkpoints = Checkpoints(tmp_path / "checkpoints", Limits(file_bytes=1000, total_bytes=1500))
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

    assert checkpoints.restore(workspace, before) == []
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt"]


def test_the_limits_come_from_the_settings():
    assert limits(CheckpointSettings()) == Limits(10 * 2**20, 2**30)
    assert limits(CheckpointSettings.from_env({MAX_FILE_ENV: "0.5", "AGENT_CHECKPOINT_MAX_MB": "2"})) == Limits(
        2**19, 2 * 2**20)
    with pytest.raises(ValueError, match=MAX_FILE_ENV):
        CheckpointSettings.from_env({MAX_FILE_ENV: "lots"})


def test_the_diff_since_a_checkpoint_shows_changed_and_created_files_but_not_the_large_ones(tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("one\n")
    checkpoints = Checkpoints(tmp_path / "checkpoints", Limits(file_bytes=1000, total_bytes=2**20))
    commit = checkpoints.save(workspace, "task", 1)
    (workspace / "notes.md").write_text("two\n")
    (workspace / "new.txt").write_text("fresh\n")
    (workspace / "big.bin").write_bytes(b"x" * 2000)
    diff = checkpoints.diff(workspace, commit)
    assert "-one\n+two" in diff and "+fresh" in diff and "big.bin" not in diff
    assert checkpoints.diff(workspace, checkpoints.save(workspace, "task", 2)) == ""
