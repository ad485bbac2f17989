"""What a workspace checkpoint costs: a save of many small files, of a real tree, and after
a command wrote large files.

    python -m benchmarks.checkpoint_budget [--runs 5] [--tree DIR]

Each row is the median of ``--runs`` rounds, each in a fresh checkpoint repository: the
first save (every file read), then the save after one small file changed (the stat cache
spares the rest), which is what a tool call pays. ``small``: 2,000 small files. ``tree``:
a copy of ``--tree`` (default: this checkout, its ``.git`` included). ``large``: 200 small
files, then a 4 GiB sparse file (``truncate -s 4G``) and 100 MB of random bytes are
written; the save after them reflinks or copies what fits the budget and names the rest.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from core.settings import CheckpointSettings
from runtime.checkpoints import Checkpoints, limits

ROOT = Path(__file__).resolve().parents[1]


def small_files(workspace: Path, count: int = 2000) -> None:
    for i in range(count):
        folder = workspace / f"dir{i // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"file{i}.txt").write_text(f"line {i}\n" * 20)


def large_files(workspace: Path) -> None:
    small_files(workspace, 200)


def one_round(fill: Callable[[Path], None], change: str) -> tuple[float, float]:
    """Seconds the first save took, and the one after ``change`` (a shell command) ran."""
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        fill(workspace)
        checkpoints = Checkpoints(Path(tmp) / "checkpoints", limits(CheckpointSettings()))
        started = time.perf_counter()
        checkpoints.save(workspace, "bench", 1)
        first = time.perf_counter() - started
        subprocess.run(change, shell=True, cwd=workspace, check=True)
        started = time.perf_counter()
        commit = checkpoints.save(workspace, "bench", 2)
        took = time.perf_counter() - started
        left = [f.describe() for f in checkpoints.left_out(workspace, commit)]
        print(f"  first {first * 1000:8.0f} ms   next {took * 1000:8.0f} ms   left out: {', '.join(left) or 'nothing'}")
        return first, took


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the real tree to copy and save")
    args = parser.parse_args()

    def tree(workspace: Path) -> None:
        shutil.copytree(args.tree, workspace, symlinks=True, dirs_exist_ok=True)

    rows: list[tuple[str, Callable[[Path], None], str]] = [
        ("small: 2,000 small files", small_files, "echo 2 >> dir0/file0.txt"),
        (f"tree: {args.tree}", tree, "echo 2 >> README.md"),
        ("large: a 4 GiB sparse file and 100 MB of random bytes",
         large_files, "truncate -s 4G big.img && head -c 100M /dev/urandom > r.bin && echo 2 >> dir0/file0.txt"),
    ]
    for label, fill, change in rows:
        print(label)
        runs = [one_round(fill, change) for _ in range(args.runs)]
        print(f"  median: first {statistics.median(r[0] for r in runs) * 1000:.0f} ms, "
              f"next {statistics.median(r[1] for r in runs) * 1000:.0f} ms over {len(runs)} run(s)")


if __name__ == "__main__":
    main()
