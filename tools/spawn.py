"""The ``spawn`` tool: delegate a self-contained sub-task to a sub-agent.

The sub-agent is a child workflow with its own empty context, a minimal system
prompt and an optional narrower tool list; the parent receives only its final
summary as this call's result. The workflow runs it (this handler is never
reached through the tool activity: if it is, the call is refused).
"""

from __future__ import annotations

from core.tool_args import SpawnArgs
from tools.base import Danger, ToolContext, ToolDefinition, ToolOutcome

DESCRIPTION = """\
Delegate a self-contained sub-task to a sub-agent that starts with an empty context in the
same workspace and reports back only its final summary.
- Use it for work that needs many steps whose details you do not need to keep (e.g. searching
  a large codebase, trying out an approach), so your own context stays small.
- Describe the sub-task completely: the sub-agent sees nothing of your conversation.
- `tools` optionally restricts the sub-agent's tools (e.g. ["file"] for read-only research).
Example: {"task": "List every function in src/ that opens a file without a context manager,
          as path:line lines.", "tools": ["file", "message"]}
"""


async def refuse(args: SpawnArgs, ctx: ToolContext) -> ToolOutcome:
    return ToolOutcome(status="error", content="spawn runs as a child workflow, not as a tool activity")


TOOL = ToolDefinition(
    name="spawn",
    description=DESCRIPTION,
    args_model=SpawnArgs,
    handler=refuse,
    danger=Danger.SAFE,
    idempotent=True,
    compact_keys=("task",),
)  # runs as a child workflow: core.tool_args.CHILD_WORKFLOW_TOOLS
