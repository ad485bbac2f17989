"""What an MCP tool call costs over a bare tool activity, and what MCP adds to a model call's input.

    python -m benchmarks.mcp_overhead [--runs 200]

Runs the tool activity (gate, started and finished records, heartbeats, redaction, audit)
``--runs`` times alternately on a built-in call (``file`` read of a small file) and on an MCP
call (``get_current_time`` of mcp-server-time over stdio, its server started once and kept,
as a worker does), and prints the median and p95 of each, the median difference, and the
raw SDK call alone. Then the size of one turn's LLM activity input with the MCP tools
offered by name (what the workflow sends) against carrying their specs in every input.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from temporalio.testing import ActivityEnvironment

from activities.mcp import McpActivities, McpCatalog, McpToolRunner
from activities.mcp_sessions import McpSessions
from activities.tools import ToolActivities
from benchmarks.common import quiet_logging
from contracts.activities import LlmCallInput, PromptParams, ToolCallInput
from contracts.mcp import McpCall, McpListInput, McpServerConfig
from contracts.toolset import DEFAULT_TOOLS
from core.messages import ToolCallRequest
from runtime.audit import AuditLog
from runtime.secrets import SecretStore
from runtime.settings import load_settings
from runtime.store import ContextStore

BIN = Path(sys.executable).parent


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


def line(name: str, values: list[float]) -> str:
    return f"{name:<28} median {statistics.median(values):7.2f} ms   p95 {p95(values):7.2f} ms"


async def timed(env: ActivityEnvironment, tools: ToolActivities, inp: ToolCallInput) -> float:
    started = time.perf_counter()
    result = await env.run(tools.run_tool, inp)
    if result.status != "ok":
        raise SystemExit(f"the call failed: {result.content}")
    return (time.perf_counter() - started) * 1000


async def main() -> int:
    parser = argparse.ArgumentParser(description="MCP call overhead over a bare tool activity.")
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    quiet_logging()
    servers = {
        "time": McpServerConfig(command=str(BIN / "mcp-server-time"), args=["--local-timezone", "UTC"]),
        "git": McpServerConfig(command=str(BIN / "mcp-server-git"), args=["--repository", str(Path.cwd())]),
    }
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        (workspace / "notes.txt").write_text("a small file\n" * 8)
        secrets, config = SecretStore({}), load_settings()
        sessions = McpSessions(secrets, log_dir=workspace / "logs", egress=config.egress)
        tools = ToolActivities(ContextStore(workspace / "context.db"), secrets, config,
                               AuditLog(workspace / "audit.jsonl", secrets), mcp=McpToolRunner(sessions))
        env = ActivityEnvironment()
        listing = await env.run(McpActivities(sessions, McpCatalog()).list_tools,
                                McpListInput(task_id="bench", context_id="bench", servers=servers))
        if listing.errors:
            raise SystemExit(f"MCP servers did not start: {listing.errors}")

        def call(n: int, name: str, arguments: dict, mcp: McpCall | None = None) -> ToolCallInput:
            request = ToolCallRequest(id=f"c{n}", name=name, arguments=arguments, danger="safe")
            return ToolCallInput(task_id="bench", turn=n, workspace=str(workspace), call=request,
                                 approval="dangerous", mcp=mcp)

        mcp_call = McpCall(server="time", tool="get_current_time", config=servers["time"])
        bare, mcp, raw = [], [], []
        conn = await sessions.connection("time", servers["time"])
        for n in range(args.runs):
            bare.append(await timed(env, tools, call(n, "file", {"action": "read", "path": "notes.txt"})))
            mcp.append(await timed(env, tools, call(n, "mcp__time__get_current_time", {"timezone": "UTC"}, mcp_call)))
            started = time.perf_counter()
            await conn.call("get_current_time", {"timezone": "UTC"}, 30)
            raw.append((time.perf_counter() - started) * 1000)
        await sessions.close()

    print(f"{args.runs} calls each, the tool activity run in-process (ActivityEnvironment)")
    print(line("built-in file read", bare))
    print(line("MCP get_current_time", mcp))
    print(line("  of which the SDK call", raw))
    extra = statistics.median(b - a for a, b in zip(bare, mcp))
    print(f"MCP overhead per call over a bare tool activity: {extra:.2f} ms (median of paired differences)")

    names = [*DEFAULT_TOOLS, *(t.name for t in listing.tools)]
    base = LlmCallInput(task_id="bench", turn=2, provider="openai", model="m", context_id="c", total=4,
                        prompt=PromptParams(workspace=str(Path.cwd()), date="2026-01-01"), tool_names=list(DEFAULT_TOOLS))
    by_name = base.model_copy(update={"tool_names": names})
    specs = len(json.dumps([t.spec().model_dump() for t in listing.tools]))
    print(f"LLM activity input per turn, {len(listing.tools)} MCP tools (time + git): without MCP "
          f"{len(base.model_dump_json())} B; with them by name {len(by_name.model_dump_json())} B (chosen); "
          f"with their specs carried {len(by_name.model_dump_json()) + specs} B")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
