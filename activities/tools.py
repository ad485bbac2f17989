"""The tool activity: validate, coerce and run one tool call in the task's workspace."""

from __future__ import annotations

from pathlib import Path

from temporalio import activity

import tools
from activities.heartbeat import with_heartbeats
from activities.log import get_logger
from activities.types import TOOL_ACTIVITY, ToolCallInput
from tools.base import ToolContext, ToolResult


@activity.defn(name=TOOL_ACTIVITY)
async def run_tool(inp: ToolCallInput) -> ToolResult:
    log = get_logger(workflow_id=inp.task_id, activity=TOOL_ACTIVITY, turn=inp.turn, tool=inp.call.name)
    workspace = Path(inp.workspace)
    if not workspace.is_dir():
        return ToolResult(status="error", content=f"the workspace {inp.workspace} does not exist")
    ctx = ToolContext(
        workspace=workspace,
        task_id=inp.task_id,
        heartbeat=lambda detail: activity.heartbeat(detail),
    )
    result = await with_heartbeats(
        tools.execute(inp.call.name, inp.call.arguments, ctx, parse_error=inp.call.parse_error)
    )
    log.info("tool done", status=result.status, exit_code=result.exit_code, truncated=result.truncated)
    return result
