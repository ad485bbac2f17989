"""The tool activity's records of a call: its gate, its started/finished bookkeeping, and the
workspace checkpoint taken before it runs.

Split from ``activities/tools.py`` (which runs the call) so each stays one concept under 300
lines: the gate refuses a call that needs approval unless that exact call was approved, and
the helpers read what an earlier attempt left (its heartbeat's ``ToolProgress``) and name the
call in the store, so a retry never runs a call twice; the notes the model gets for a call cut
off by a crash and for the files its checkpoint left out. ``BeforeCalls`` checkpoints the
workspace before a call that may change it (not reads, not the browser's, not a sub-agent's),
one save per workspace at a time, so ``rewind`` can undo it.
"""

from __future__ import annotations

import asyncio
import weakref
from pathlib import Path
from typing import Any

from temporalio import activity

from contracts.activities import TOOL_ACTIVITY, ToolCallInput, ToolProgress
from contracts.task import ApprovalMode
from contracts.toolset import BROWSER_TOOLS
from core.messages import call_digest
from core.settings import Settings
from runtime import checkpoints
from runtime.logs import get_logger
from tools.base import Danger, ToolOutcome
from tools.registry import REGISTRY, classify_call

INTERRUPTED = (
    "[interrupted] This call was running when its worker stopped (a crash or a lost "
    "connection), so it may have partly run. It was not run again. Output so far:\n{output}\n"
    "Check what it did before deciding whether to run it again."
)


def _offline(inp: ToolCallInput) -> bool:
    """A call of an HTTP MCP server the task added itself (the worker's own are the operator's),
    in a task started without --network: refused before the server is asked anything."""
    config = inp.mcp.config if inp.mcp is not None else None
    return not inp.network and config is not None and config.type != "stdio"


def _call_key(inp: ToolCallInput) -> str | None:
    """A call's key in the store: the workflow run, the result's seq and the call's id (ids
    alone may repeat across turns; a rewind (reset) starts a new run that reuses seqs)."""
    if inp.result_seq is None:
        return None
    return f"{activity.info().workflow_run_id}:{inp.result_seq}:{inp.call.id}"


def _gate(inp: ToolCallInput, verdict: tuple[Danger, str] | None = None) -> ToolOutcome | None:
    """A refusal when the call needs approval under the task's mode and this exact call
    was not approved; None when it may run. ``verdict``: the call's classification when the
    registry cannot give it (an MCP tool's). An input without an approval mode is refused."""
    if inp.approval is None:
        return ToolOutcome(status="error", content="[refused] This call was not run: its input names no approval mode.")
    danger, reason = verdict or classify_call(inp.call.name, inp.call.arguments)
    if not ApprovalMode(inp.approval).requires(danger.value):
        return None
    if _approved(inp):
        return None
    why = reason or f"approval mode is {inp.approval}"
    return ToolOutcome(
        status="error",
        content=f"[refused] This call was not run: it needs approval ({why}) and this exact call was not approved.",
    )


def _approved(inp: ToolCallInput) -> bool:
    """Whether the person approved this exact call (its digest), which also lets it write the
    workspace's control files (``tools/control_paths.py``)."""
    return inp.approved is not None and inp.approved == call_digest(inp.call.name, inp.call.arguments)


def _details(details: Any) -> dict[str, Any] | None:
    """The last heartbeat's ToolProgress as a dict (a legacy string counts as started)."""
    if not details:
        return None
    last = details[-1] if isinstance(details, list | tuple) else details
    if isinstance(last, ToolProgress):
        return last.model_dump()
    if isinstance(last, dict):
        return last
    return {"started": True, "output": ""}


def _finished(details: Any) -> ToolOutcome | None:
    """The result an earlier attempt ran to the end with and could not store, if any."""
    found = _details(details)
    kept = found.get("finished") if found else None
    return ToolOutcome.model_validate(kept) if isinstance(kept, dict) else None


def _started(details: Any) -> bool:
    found = _details(details)
    return bool(found and found.get("started", True))


def _output_so_far(details: Any) -> str:
    found = _details(details)
    return str(found.get("output", "")) if found else ""


def not_undoable(files: list[checkpoints.LeftOut], shown: int = 5) -> str:
    """A note for the model under a call's result: the files the checkpoint taken before the
    call left out, whose changes a rewind cannot undo (the first ``shown`` named)."""
    named = ", ".join(f.describe() for f in files[:shown])
    more = f" and {len(files) - shown} more" if len(files) > shown else ""
    return f"\n[checkpoint] not undoable by rewind (left out of the checkpoint before this call): {named}{more}"


class BeforeCalls:
    """The checkpoints of one worker's tool calls (made on the first call that needs one)."""

    def __init__(self, settings: Settings, saved: checkpoints.Checkpoints | None = None) -> None:
        self.settings = settings
        self._saved = saved
        # One save per workspace at a time in this process, waited for here rather than in a
        # thread: tasks sharing a workspace would otherwise each hold one of the default
        # executor's few threads blocked on the repository's lock, and every store read and
        # write of every task (which use the same threads) would wait behind them.
        self._saving: weakref.WeakValueDictionary[Path, asyncio.Lock] = weakref.WeakValueDictionary()

    async def save(self, inp: ToolCallInput, workspace: Path) -> list[checkpoints.LeftOut]:
        """Record the workspace before a call that may change it; the files the checkpoint left
        out (a change to them cannot be undone)."""
        if not self.settings.checkpoints.enabled or inp.call.runs_in != "activity" or inp.call.name not in REGISTRY:
            return []
        if inp.call.name in BROWSER_TOOLS:
            return []  # pages change, files do not
        if classify_call(inp.call.name, inp.call.arguments)[0].value == "safe":
            return []  # reads change nothing
        if self._saved is None:
            self._saved = checkpoints.Checkpoints.from_settings(self.settings.checkpoints, self.settings.paths)
        saved = self._saved
        lock = self._saving.setdefault(workspace, asyncio.Lock())
        try:
            async with lock:
                commit = await asyncio.to_thread(saved.save, workspace, inp.task_id, inp.turn)
            return await asyncio.to_thread(saved.left_out, workspace, commit)
        except (checkpoints.CheckpointError, OSError) as err:  # a missing checkpoint never stops the work
            get_logger(workflow_id=inp.task_id, activity=TOOL_ACTIVITY).warning(
                "workspace checkpoint failed: rewind cannot restore this turn", error=str(err))
            return []
