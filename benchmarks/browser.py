"""What a browser call costs: ``visit`` then ``view`` of a local page, cold and warm.

    python -m benchmarks.browser [--runs 5]

Serves a small page (an article that a script completes, a form, links) from a thread on
127.0.0.1 and runs the tool handlers as the tool activity does, in three situations:

- **cold**: a new pool each run, so Chromium's launch is included (a worker's first
  browser call);
- **warm, new task**: Chromium running, a new task each run (a new context and proxy);
- **warm, same task**: the same task's context again (the common case: a model browsing).

Prints the median and p95 of ``visit``, of ``view`` and of both, in milliseconds. Needs
Chromium (``apt-get install chromium`` or ``AGENT_CHROMIUM``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from core.settings import Settings
from runtime.settings import load_settings
from tools.base import ToolContext
from tools.browser import chromium_problem
from tools.browser.navigate import ViewArgs, VisitArgs, view, visit
from tools.browser.pool import BrowserPool

PAGE = b"""<!DOCTYPE html><html><head><title>Bench article</title></head><body>
<header><a href="/">Home</a> <a href="/about">About</a></header>
<main><h1>Durable execution</h1>
<p>A durable workflow survives crashes: its state is rebuilt from the event history.</p>
<ul><li>Every step runs to completion</li><li>State is never lost</li></ul>
<form action="/search"><label>Search <input name="q"></label><button>Go</button></form>
<div id="more"></div></main>
<script>document.getElementById("more").innerHTML = "<p>" + "Filled in by a script. ".repeat(20) + "</p>";</script>
</body></html>"""


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host}:{port}/article"
    finally:
        server.shutdown()
        server.server_close()


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


async def visit_and_view(url: str, ctx: ToolContext) -> tuple[float, float]:
    """(visit ms, view ms) of one run."""
    started = time.perf_counter()
    visited = await visit(VisitArgs(url=url), ctx)
    middle = time.perf_counter()
    viewed = await view(ViewArgs(), ctx)
    ended = time.perf_counter()
    for result in (visited, viewed):
        if result.status != "ok":
            raise SystemExit(f"the call failed: {result.content}")
    if visited.browser is not None:
        ctx.browser = visited.browser
    return (middle - started) * 1000, (ended - middle) * 1000


def report(label: str, runs: list[tuple[float, float]]) -> None:
    visits, views = [r[0] for r in runs], [r[1] for r in runs]
    both = [a + b for a, b in runs]
    print(
        f"{label:<17} visit median {statistics.median(visits):7.1f} ms (p95 {p95(visits):7.1f}), "
        f"view median {statistics.median(views):6.1f} ms (p95 {p95(views):6.1f}), "
        f"both median {statistics.median(both):7.1f} ms"
    )


def new_ctx(workspace: Path, pool: BrowserPool, config: Settings) -> ToolContext:
    return ToolContext(workspace=workspace, settings=config, task_id=f"bench-{uuid.uuid4().hex[:8]}",
                       network=True, browsers=pool)


async def main() -> int:
    parser = argparse.ArgumentParser(description="What a browser call costs: visit then view, cold and warm.")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    config = load_settings()  # AGENT_CHROMIUM and the deny list, as a worker started here has them
    if problem := chromium_problem(config.browser):
        print(problem, file=sys.stderr)
        return 2
    with serving() as url, tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        cold: list[tuple[float, float]] = []
        for _ in range(args.runs):
            fresh = BrowserPool(config.browser)  # a worker's first browser call: Chromium starts
            try:
                cold.append(await visit_and_view(url, new_ctx(workspace, fresh, config)))
            finally:
                await fresh.close_all()
        pool = BrowserPool(config.browser)
        try:
            await visit_and_view(url, new_ctx(workspace, pool, config))  # launch, not counted
            new_task: list[tuple[float, float]] = []
            for _ in range(args.runs):
                ctx = new_ctx(workspace, pool, config)
                new_task.append(await visit_and_view(url, ctx))
                await pool.close_task(ctx.task_id)
            same = new_ctx(workspace, pool, config)
            await visit_and_view(url, same)  # the context made, not counted
            same_task = [await visit_and_view(url, same) for _ in range(args.runs)]
        finally:
            await pool.close_all()
    print(f"visit + view of a local page, {args.runs} runs each")
    report("cold (launch):", cold)
    report("warm, new task:", new_task)
    report("warm, same task:", same_task)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
