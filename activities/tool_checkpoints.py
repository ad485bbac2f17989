"""The workspace checkpoint a tool call takes before it runs, so ``rewind`` can undo it.

Split from ``activities/tools.py`` (which runs the call): which calls need one (not reads, not
the browser's, not a sub-agent's), one save per workspace at a time, and the note that names
what the checkpoint left out, whose changes a rewind cannot undo.
"""

from __future__ import annotations

import asyncio
import weakref
from pathlib import Path

from contracts.activities import TOOL_ACTIVITY, ToolCallInput
from contracts.toolset import BROWSER_TOOLS
from core.settings import Settings
from runtime import checkpoints
from runtime.logs import get_logger
from tools.registry import REGISTRY, classify_call


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
