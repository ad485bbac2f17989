"""What the bubblewrap sandbox adds to a shell command.

    python -m benchmarks.sandbox_overhead [--runs 50] [--command true]

Runs the shell tool's handler ``--runs`` times on the same command, alternating
unsandboxed (``AGENT_SANDBOX=off``) and sandboxed runs so that both see the same machine,
and prints the median and p95 wall time of each and the median difference (aim: under
50 ms per command).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from core.settings import SandboxSettings
from runtime.settings import load_settings
from tools import sandbox
from tools.base import ToolContext
from tools.shell import ShellArgs, run_shell
from worker import configure_tools


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


async def timed(command: str, ctx: ToolContext, status: sandbox.SandboxStatus) -> float:
    sandbox._STATUS = status  # the process-wide probe result, chosen per run
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
    configure_tools(load_settings())  # commands get what they would get from a worker started here
    try:
        boxed = sandbox.probe(SandboxSettings(mode="required"))
    except sandbox.SandboxUnavailable as err:
        print(f"no sandbox here: {err}", file=sys.stderr)
        return 2
    bare = sandbox.probe(SandboxSettings(mode="off"))
    with tempfile.TemporaryDirectory() as tmp:
        ctx = ToolContext(workspace=Path(tmp))
        plain: list[float] = []
        sandboxed: list[float] = []
        for _ in range(args.runs):
            plain.append(await timed(args.command, ctx, bare))
            sandboxed.append(await timed(args.command, ctx, boxed))
    extra = statistics.median(b - a for a, b in zip(plain, sandboxed))
    print(f"command: {args.command!r}, {args.runs} runs each")
    print(f"unsandboxed: median {statistics.median(plain):.1f} ms, p95 {p95(plain):.1f} ms")
    print(f"sandboxed:   median {statistics.median(sandboxed):.1f} ms, p95 {p95(sandboxed):.1f} ms")
    print(f"overhead:    median {extra:.1f} ms per command (aim: under 50 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
