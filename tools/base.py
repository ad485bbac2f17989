"""What a tool is: a definition for the model, a pure handler for the engine, a policy.

A handler takes validated arguments and a ``ToolContext`` and returns a
declarative ``ToolOutcome``. It never writes to the history, pushes events or
decides the next step: the workflow does that with what the result declares.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, Field

from core.coerce import schema_of
from core.messages import ToolSpec
from core.settings import Settings
from core.tool_args import CHILD_WORKFLOW_TOOLS, NOT_FOR_SUBAGENTS, StrictArgs
from core.tool_outcome import BrowserState, Danger, ToolOutcome

if TYPE_CHECKING:
    from tools.shell_network import CommandEgress


class Browsers(Protocol):
    """The worker's browser (tools/browser/pool.py's BrowserPool) as a tool context carries it,
    so that this floor of the tools imports no tool: the browser tools take it back as their
    pool, and the worker closes each task's pages when the task ends."""

    async def close_task(self, task_id: str) -> None: ...


@dataclass
class ToolContext:
    """What a handler may know about where it runs."""

    workspace: Path
    # The worker's settings (read once by worker.py): each tool takes its group from here.
    settings: Settings
    task_id: str = ""
    heartbeat: Callable[[str], None] = lambda _detail: None
    # The output so far of a long-running call (its tail), kept by the caller so that a
    # retry after a crash can tell the model what the interrupted call had printed.
    progress: Callable[[str], None] = lambda _output: None
    # Secrets in clear become placeholders: tools that cut their output call it first, so
    # that a secret straddling the cut never leaks in part.
    redact: Callable[[str], str] = lambda text: text
    # The task's tools may reach the network (it was started with --network): tools/egress.py.
    network: bool = False
    # Paths a sandboxed command must not see (the worker's data, secrets, store).
    hidden: tuple[Path, ...] = ()
    # The person approved this exact call: it may write the workspace's control files
    # (tools/control_paths.py), which are read-only to every other call.
    approved: bool = False
    # The task's browser as the workflow recorded it (tabs, active tab); None: never opened.
    # A browser tool on a worker that does not hold this task's pages reopens these.
    browser: BrowserState | None = None
    # The worker's browser (one Chromium for its tasks); None: no browser here.
    browsers: Browsers | None = None
    # Where tools keep indexes they can rebuild from the workspace (the memory search index,
    # under the worker's data directory); None: an index in memory for each call.
    index_dir: Path | None = None
    # The worker's egress point for shell commands of tasks with the network; None: a
    # sandboxed command gets no way out even then.
    command_egress: CommandEgress | None = None


BULKY_KEYS = frozenset({"content", "new", "old"})  # file contents: never in a summary line
ArgsT = TypeVar("ArgsT", bound=BaseModel)


@dataclass(frozen=True)
class ToolDefinition(Generic[ArgsT]):
    name: str
    description: str
    args_model: type[ArgsT]
    handler: Callable[[ArgsT, ToolContext], Awaitable[ToolOutcome]]
    danger: Danger = Danger.SAFE
    # Per-call classification from the arguments (e.g. shell commands), alone or with the
    # reason a person reads when asked to approve; None uses `danger`.
    classify: Callable[[ArgsT], Danger | tuple[Danger, str]] | None = None
    # The same verdict with the task's workspace at hand, for a reason that shows what is there
    # (the shell: the script a command runs); None: ``classify`` alone.
    classify_in: Callable[[ArgsT, Path], Danger | tuple[Danger, str]] | None = None
    # Whether a call may run again when a crash cut it off before its result was recorded:
    # reads and writes of the same content may; a command with effects may not (the model
    # is told it was interrupted instead). A function decides per call from the arguments.
    idempotent: bool | Callable[[ArgsT], bool] = False
    # Whether a call may run as a Temporal local activity (the same tool activity, on the
    # worker running the task's workflow): quick, in-process and read-only, so that a crash
    # cut off is simply run again. It costs one marker event instead of an activity's three
    # events and a workflow task's three, and no round trip through the server's matching.
    # A function decides per call from the arguments.
    local: bool | Callable[[ArgsT], bool] = False
    # Whether a call changes nothing a task is asked to check before it finishes: no file
    # written, no command run that may write, nothing clicked or sent (a read, a page, a
    # message to the user, ``cat a.txt``). A task whose calls were all read-only finishes
    # without a verification reminder; a read-only command after a change is its check.
    read_only: bool | Callable[[ArgsT], bool] = False
    # Whether a read-only call may run at the same time as the other such calls of the same
    # reply (they read what no call beside them changes): they run together, each as its own
    # activity. A function decides per call from the arguments.
    parallel: bool | Callable[[ArgsT], bool] = False
    # Keys of the arguments that name the call in an activity summary (the Temporal UI's
    # ``tool · shell · ls -la``); None: every argument but bulky contents.
    summary_keys: tuple[str, ...] | None = None
    # Keys of the arguments that identify the call in a one-line compact summary.
    compact_keys: tuple[str, ...] = field(default_factory=tuple)
    # For tools that bring outside content: the source to name when wrapping the output
    # as untrusted data (None: the output is not wrapped).
    untrusted_source: Callable[[dict[str, Any]], str | None] | None = None

    @property
    def runs_in(self) -> Literal["activity", "child_workflow"]:
        """Where a call runs: "activity" (the tool activity runs the handler) or "child_workflow"
        (the engine runs a sub-agent; the handler only refuses). Declared once, in
        ``core.tool_args.CHILD_WORKFLOW_TOOLS``, which the workflow reads too."""
        return "child_workflow" if self.name in CHILD_WORKFLOW_TOOLS else "activity"

    @property
    def for_subagents(self) -> bool:
        """False for tools that only make sense with the full prompt (memory, skills): hidden
        from sub-agents, whose prompt is minimal. Declared once, in
        ``core.tool_args.NOT_FOR_SUBAGENTS``, which the workflow reads too."""
        return self.name not in NOT_FOR_SUBAGENTS

    def summarize(self, arguments: dict[str, Any]) -> str:
        """The call's detail in one line, for the Temporal UI and the CLI."""
        keys = self.summary_keys
        shown = [v for k, v in arguments.items() if (k in keys if keys is not None else k not in BULKY_KEYS)]
        return " ".join(str(v) for v in shown)

    def spec(self) -> ToolSpec:
        """The definition the model sees; built once per tool (schema generation is costly) and
        shared by every call, read-only: the providers build their wire bodies from it, they
        never change it (a deep copy per tool per model call cost 3% of a busy worker)."""
        cached = _SPECS.get(self.name)
        if cached is None or cached[0] is not self:
            cached = _SPECS[self.name] = (self, self._build_spec())
        return cached[1]

    def _build_spec(self) -> ToolSpec:
        schema = schema_of(self.args_model)
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            if isinstance(prop.get("title"), str):
                del prop["title"]  # pydantic's auto titles cost tokens on every call
        return ToolSpec(name=self.name, description=self.description, parameters=schema)


_SPECS: dict[str, tuple[ToolDefinition[Any], ToolSpec]] = {}


__all__ = [
    "Danger",
    "Field",
    "StrictArgs",
    "ToolContext",
    "ToolDefinition",
    "ToolOutcome",
]
