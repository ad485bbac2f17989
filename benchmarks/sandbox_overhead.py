"""What the bubblewrap sandbox adds to a shell command.

    python -m benchmarks.sandbox_overhead [--runs 50] [--command true]

Runs the shell tool's handler ``--runs`` times on the same command, alternating
unsandboxed (``AGENT_SANDBOX=off``) and sandboxed runs so that both see the same machine,
and prints the median and p95 wall time of each and the median difference (aim: under
10 ms per command, issue 38).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from core.settings import SandboxSettings
from runtime.settings import load_settings
from tools import sandbox
from tools.base import ToolContext
from tools.shell import ShellArgs, run_shell


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


async def timed(command: str, ctx: ToolContext) -> float:
    started = time.perf_counter()
    result = await run_shell(ShellArgs(command=command, timeout_s=60), ctx)
    if result.exit_code != 0:
        raise SystemExit(f"the command failed: {result.content}")
    return (time.perf_counter() - started) * 1000


async def main() -> int:
    parser = argparse.ArgumentParser(description="What the bubblewrap sandbox adds to a shell command.")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--command", default="true")
    args = parser.parse_args()
    config = load_settings()  # commands get what they would get from a worker started here
    required, off = SandboxSettings(mode="required"), SandboxSettings(mode="off")
    try:
        sandbox.status(required)  # probed once, as a worker does at start
    except sandbox.SandboxUnavailable as err:
        print(f"no sandbox here: {err}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        boxed = ToolContext(workspace=Path(tmp), settings=replace(config, sandbox=required))
        bare = ToolContext(workspace=Path(tmp), settings=replace(config, sandbox=off))
        plain: list[float] = []
        sandboxed: list[float] = []
        for _ in range(args.runs):
            plain.append(await timed(args.command, bare))
            sandboxed.append(await timed(args.command, boxed))
    extra = statistics.median(b - a for a, b in zip(plain, sandboxed))
    print(f"command: {args.command!r}, {args.runs} runs each")
    print(f"unsandboxed: median {statistics.median(plain):.1f} ms, p95 {p95(plain):.1f} ms")
    print(f"sandboxed:   median {statistics.median(sandboxed):.1f} ms, p95 {p95(sandboxed):.1f} ms")
    print(f"overhead:    median {extra:.1f} ms per command (aim: under 10 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
