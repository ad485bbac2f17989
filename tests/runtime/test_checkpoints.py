"""Workspace checkpoints: tasks sharing a workspace save into one repository, one at a time."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from runtime.checkpoints import Checkpoints

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
