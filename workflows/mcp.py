"""MCP tools in the loop: listed by an activity when the task starts (and again when a server
says its list changed), kept in the loop state, offered every turn from there.

A mixin of the task workflow (``workflows/task.py``): deterministic, no I/O. The listing is
an activity result, so the history holds it once and a replay offers the same tools; a
task without MCP servers schedules nothing here.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from contracts.mcp import MCP_LIST_ACTIVITY, MCP_TOOLS_QUERY, McpCall, McpListing, McpListInput, McpTool
    from core.entries import StatusNotice
    from core.messages import ToolCallRequest
    from workflows.engine import LoopBase

# Starting a server (a Python one takes seconds) and listing it; servers that fail are
# reported in the listing, not retried here: the task goes on with the others.
LIST_TIMEOUT = timedelta(minutes=3)
LIST_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=3)


class McpMixin(LoopBase):
    @workflow.query(name=MCP_TOOLS_QUERY, description="The MCP tools the task listed at its start: for workers.")
    def mcp_tools(self) -> list[McpTool]:
        """For an LLM activity on a worker that did not list them: read from the state."""
        return self.state.mcp_tools

    async def _list_mcp_tools(self, *, again: bool = False) -> None:
        """List the task's MCP tools and offer them from now on (``again``: after a server said
        its list changed; the change is recorded as a notice)."""
        task, state = self.task, self.state
        listing: McpListing = await workflow.execute_activity(
            MCP_LIST_ACTIVITY,
            McpListInput(task_id=workflow.info().workflow_id, context_id=state.context_id,
                         servers=task.mcp_servers, worker=task.worker_mcp, network=task.network),
            result_type=McpListing,
            start_to_close_timeout=LIST_TIMEOUT,
            retry_policy=LIST_RETRY,
            summary=f"mcp · list tools · {', '.join(sorted(task.mcp_servers)) or 'worker servers'}",
        )
        before = {t.name for t in state.mcp_tools}
        state.mcp_tools, state.mcp_digests = listing.tools, listing.digests
        self.tool_names = task.offered_tools([t.name for t in state.mcp_tools])
        for server, error in sorted(listing.errors.items()):
            self._append(StatusNotice(reason="mcp", text=f"MCP server {server} is unavailable: {error}"))
        if again:
            after = {t.name for t in state.mcp_tools}
            added, removed = sorted(after - before), sorted(before - after)
            self._append(StatusNotice(reason="mcp", text=(
                f"the MCP tools changed: {len(added)} added ({', '.join(added) or 'none'}), "
                f"{len(removed)} removed ({', '.join(removed) or 'none'})")))

    def _mcp_call(self, call: ToolCallRequest) -> McpCall | None:
        """What the tool activity needs for a call of an offered MCP tool; None for any other
        call (an MCP name the task does not offer runs as an unknown tool: it does not run)."""
        if call.name not in self.tool_names:
            return None
        tool = self._mcp_tool(call.name)
        if tool is None:
            return None
        return McpCall(server=tool.server, tool=tool.tool, config=self.task.mcp_servers.get(tool.server),
                       listed=self.state.mcp_digests.get(tool.server, ""))

    def _mcp_tool(self, name: str) -> McpTool | None:
        return next((t for t in self.state.mcp_tools if t.name == name), None)
