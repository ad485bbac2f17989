"""What a workspace checkpoint costs after a command wrote large files, with and without the limit.

    python -m benchmarks.checkpoint_budget [--runs 5] [--unlimited]

A workspace of small files is checkpointed; then, as a command would, a 4 GiB sparse file
(``truncate -s 4G``, no disk) and 100 MB of random bytes are written with one changed small
file, and the next checkpoint is timed: the median of ``--runs`` rounds, each in a fresh
repository. ``--unlimited`` also times it with no size limit (git hashes every byte: the
two minutes the limit exists for; slow).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from core.settings import CheckpointSettings
from runtime.checkpoints import Checkpoints, max_file_bytes

SMALL_FILES = 200


def one_round(limit: int) -> float:
    """Seconds the checkpoint after the large files took, in a fresh workspace."""
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        for i in range(SMALL_FILES):
            (workspace / f"file{i}.txt").write_text(f"line {i}\n" * 20)
        checkpoints = Checkpoints(Path(tmp) / "checkpoints", max_file_bytes=limit)
        checkpoints.save(workspace, "bench", 1)
        subprocess.run("truncate -s 4G big.img && head -c 100M /dev/urandom > r.bin && echo 2 >> file0.txt",
                       shell=True, cwd=workspace, check=True)
        started = time.perf_counter()
        commit = checkpoints.save(workspace, "bench", 2)
        took = time.perf_counter() - started
        left = [f.describe() for f in checkpoints.left_out(workspace, commit)]
        print(f"  {took * 1000:8.0f} ms   left out: {', '.join(left) or 'nothing'}")
        return took


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--unlimited", action="store_true", help="also time it with no size limit (slow)")
    args = parser.parse_args()
    rows: list[tuple[str, int, int]] = [("limit 10 MB (the default)", max_file_bytes(CheckpointSettings()), args.runs)]
    if args.unlimited:
        rows.append(("no limit", 2**62, 1))
    for label, limit, times in rows:
        print(label)
        runs = [one_round(limit) for _ in range(times)]
        print(f"  median {statistics.median(runs) * 1000:.0f} ms over {len(runs)} run(s)")


if __name__ == "__main__":
    main()
