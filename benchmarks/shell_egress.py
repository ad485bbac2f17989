"""What the egress proxy adds: to one HTTP request, and to starting a networked command.

    python -m benchmarks.shell_egress [--requests 50] [--runs 20]

A local HTTP server on 127.0.0.1 (allowed with ``AGENT_NETWORK_ALLOW=127.0.0.1``); ``curl``
times each request (``%{time_total}``): ``--requests`` of them from the host directly, then
as many from one networked sandboxed command through the bridge and the worker's proxy.
Then ``--runs`` commands (``true``) with and without the network, alternating, for what the
bridge and the command's listener cost at start. Prints medians and the differences.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from core.settings import EgressSettings
from runtime.settings import load_settings
from tests.tools.web_fixtures import LocalWebServer, Reply
from tools import sandbox
from tools.base import ToolContext
from tools.shell import ShellArgs, run_shell
from tools.shell_network import CommandEgress

TIMED = "curl -s -o /dev/null -w '%{time_total}\\n'"


async def main(requests: int, runs: int) -> None:
    config = load_settings()
    if not sandbox.status(config.sandbox).active:
        raise SystemExit("no sandbox here: nothing to measure")
    outlet = CommandEgress(EgressSettings.from_env({"AGENT_NETWORK_ALLOW": "127.0.0.1"}))
    with tempfile.TemporaryDirectory() as tmp, LocalWebServer({"/": Reply(body=b"x" * 1024)}) as server:
        loop = f"for i in $(seq {requests}); do {TIMED} {server.url('/')}; done"
        direct = subprocess.run(["bash", "-c", loop], capture_output=True, text=True, check=True).stdout.split()

        def ctx(network: bool) -> ToolContext:
            return ToolContext(workspace=Path(tmp), settings=config, network=network, command_egress=outlet)

        proxied = (await run_shell(ShellArgs(command=loop, timeout_s=120), ctx(True))).content.split("\n[exit code")[0].split()
        starts: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(runs):
            for network in (False, True):
                began = time.perf_counter()
                await run_shell(ShellArgs(command="true", timeout_s=60), ctx(network))
                starts[network].append((time.perf_counter() - began) * 1000)
    outlet.close()
    there, through = (statistics.median(float(t) * 1000 for t in times) for times in (direct, proxied))
    print(f"one request: direct {there:.2f} ms, through the proxy {through:.2f} ms (+{through - there:.2f} ms)")
    plain, networked = statistics.median(starts[False]), statistics.median(starts[True])
    print(f"one command (true): {plain:.1f} ms, with the network {networked:.1f} ms (+{networked - plain:.1f} ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="what the egress proxy adds to a request and to a command")
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--runs", type=int, default=20)
    options = parser.parse_args()
    asyncio.run(main(options.requests, options.runs))
