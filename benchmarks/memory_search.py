"""How long ``memory`` search takes to find one fact among 2,000 notes (aim: under 50 ms).

    python -m benchmarks.memory_search [--runs 50] [--days 100] [--per-day 20]

Writes a workspace with a MEMORY.md of 100 facts and ``--days`` daily notes of ``--per-day``
lines each (2,000 notes by default), one of them the fact to find, and times the ``memory``
tool's search as the model calls it (``tools.execute``), with the index in a data directory:
the first search (it builds the index), warm searches (median and p95 of ``--runs``), and
searches each after one new note (the index brings that file up to date; median of 10). Twice: full text
alone (BM25), and merged with a local embeddings server (fakes/embeddings.py, 256-dimension
vectors over loopback; its first search embeds every line). Each row says where the fact ranked.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from core.settings import MemorySettings
from fakes.embeddings import EmbeddingsServer
from runtime.settings import load_settings
from tools import execute
from tools.base import ToolContext

FACT = "- 14:02:11 The VPN certificate of the Lisbon office expires on 2027-02-01; renew it with the IT portal."
QUERY = "when does the Lisbon VPN certificate expire"
WORDS = ("deploy build test release server database backup migration config cache queue worker "
         "review merge branch ticket customer invoice report meeting design schema index metric alert "
         "latency timeout retry budget cluster node disk memory network proxy token session login").split()


def write_workspace(root: Path, days: int, per_day: int, rng: random.Random) -> None:
    facts = [f"- Fact {i}: the {rng.choice(WORDS)} of {rng.choice(WORDS)} uses {rng.choice(WORDS)}." for i in range(100)]
    (root / "MEMORY.md").write_text("# Memory\n\n" + "\n".join(facts) + "\n")
    (root / "memory").mkdir()
    planted = rng.randrange(days), rng.randrange(per_day)
    for day in range(days):
        lines = [FACT if (day, n) == planted else
                 f"- {9 + n % 9:02d}:{n % 60:02d}:00 " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))) + "."
                 for n in range(per_day)]
        when = date(2020, 1, 1) + timedelta(days=day)
        (root / "memory" / f"{when}.md").write_text(f"# Notes {when}\n\n" + "\n".join(lines) + "\n")


async def timed(root: Path, ctx: ToolContext) -> tuple[float, int | None]:
    """One search: milliseconds, and the fact's rank in the result (None: not in it)."""
    started = time.perf_counter()
    result = await execute("memory", {"action": "search", "query": QUERY}, ctx)
    elapsed = (time.perf_counter() - started) * 1000
    hits = [line for line in result.content.splitlines() if line.startswith("- ")]
    rank = next((i for i, line in enumerate(hits, 1) if "Lisbon" in line), None)
    return elapsed, rank


async def measure(label: str, root: Path, runs: int, ctx: ToolContext) -> None:
    first, rank = await timed(root, ctx)
    warm = [(await timed(root, ctx))[0] for _ in range(runs)]
    after_note = []
    for n in range(10):
        with (root / "memory" / "2099-01-01.md").open("a") as f:
            f.write(f"- 10:00:{n:02d} One more note, number {n}, about the proxy.\n")
        after_note.append((await timed(root, ctx))[0])
    (root / "memory" / "2099-01-01.md").unlink()
    await timed(root, ctx)
    p95 = sorted(warm)[max(0, round(0.95 * len(warm)) - 1)]
    print(f"{label:<34} first {first:7.1f} ms | warm median {statistics.median(warm):5.1f} ms, p95 {p95:5.1f} ms "
          f"| after a new note, median {statistics.median(after_note):5.1f} ms | the fact ranked {rank}")


async def main() -> int:
    parser = argparse.ArgumentParser(description="How long memory search takes among 2,000 notes.")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--days", type=int, default=100)
    parser.add_argument("--per-day", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "workspace"
        root.mkdir()
        write_workspace(root, args.days, args.per_day, random.Random(7))
        print(f"{args.days * args.per_day} notes in {args.days} daily files, 100 facts in MEMORY.md; "
              f"query {QUERY!r}, {args.runs} warm runs")
        base = load_settings()
        await measure("full text (BM25)", root, args.runs,
                      ToolContext(workspace=root, settings=base, index_dir=Path(tmp) / "data" / "bm25"))
        with EmbeddingsServer() as server:
            settings = MemorySettings(embeddings_url=server.url, embeddings_model="embed-test")
            ctx = ToolContext(workspace=root, settings=dataclasses.replace(base, memory=settings),
                              index_dir=Path(tmp) / "data" / "merged")
            await measure("full text + local embeddings (RRF)", root, args.runs, ctx)
            print(f"embeddings server: {len(server.requests)} requests, {len(server.inputs)} texts embedded")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
