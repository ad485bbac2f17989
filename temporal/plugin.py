"""The one way this project builds a Temporal worker (or replayer): ``AgentPlugin``.

A ``temporalio.plugin.SimplePlugin`` holding what every worker of ours shares, so no caller
assembles it again: the workflow runner (the lean sandbox, with our own packages passed
through), the pydantic data converter with the configured codec (applied to a client or a
replayer given the plugin; a worker uses its client's), the tracing interceptors, and the
workflows and activities a worker registers. The activities are bound methods of services
the caller built and injected (worker.py for tasks, channels/gateway.py for conversations).

    Worker(client, task_queue=queue, plugins=[AgentPlugin("tasks", workflows=..., activities=...)])
    Replayer(workflows=[], plugins=[AgentPlugin.replaying(AgentTaskWorkflow)])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from temporalio import activity
from temporalio.plugin import SimplePlugin
from temporalio.worker.workflow_sandbox import SandboxRestrictions

from core.settings import CodecSettings
from temporal.codec import codec_for, data_converter
from temporal.sandbox import LeanSandboxedWorkflowRunner
from temporal.tracing import interceptors

# Our own packages are deterministic by construction (workflows/ does no I/O, reads no clock;
# the before-stop check greps for it), so the sandbox may share them instead of re-executing
# them for every workflow instance, which dominated the worker's CPU with many short tasks.
SANDBOX_RESTRICTIONS = SandboxRestrictions.default.with_passthrough_modules(
    "core", "contracts", "workflows", "activities", "providers", "tools", "prompts", "temporal", "runtime",
    "pydantic", "structlog", "httpx",
)
# The SDK's sandbox, looking up payload serialization contexts without re-entering it
# (temporal/sandbox.py says why: it was the largest part of the worker's CPU per turn).
WORKFLOW_RUNNER = LeanSandboxedWorkflowRunner(restrictions=SANDBOX_RESTRICTIONS)


class AgentPlugin(SimplePlugin):
    """A worker's workflows and activities, with the runner, converter and interceptors of
    every worker of ours. ``codec``: the payload codec's settings (None: the defaults)."""

    def __init__(
        self,
        name: str,
        *,
        workflows: Sequence[type] = (),
        activities: Sequence[Callable] = (),
        codec: CodecSettings | None = None,
    ) -> None:
        converter = data_converter(codec_for(codec or CodecSettings()))
        super().__init__(
            f"durable-agent.{name}",
            data_converter=lambda _existing: converter,
            interceptors=interceptors(),  # [] unless tracing was configured (temporal.client.connect)
            workflows=list(workflows),
            activities=list(activities),
            workflow_runner=WORKFLOW_RUNNER,
        )
        self.codec, self.converter = codec, converter
        self.registered_workflows: tuple[type, ...] = tuple(workflows)
        self.registered_activities: tuple[Callable, ...] = tuple(activities)

    @classmethod
    def replaying(cls, *workflows: type, codec: CodecSettings | None = None) -> AgentPlugin:
        """For a ``Replayer``: the workflows only (a replay runs no activity)."""
        return cls("replay", workflows=workflows, codec=codec)

    def activities_only(self) -> AgentPlugin:
        """The same activities without the workflows: for a worker that polls activities alone
        (a worker's own queue, worker.py)."""
        return AgentPlugin(self.name().removeprefix("durable-agent.") + ".activities",
                           activities=self.registered_activities, codec=self.codec)

    def activity_names(self) -> set[str]:
        """The activity types a worker with this plugin serves."""
        names = set()
        for fn in self.registered_activities:
            defn = activity._Definition.from_callable(fn)
            assert defn is not None and defn.name is not None, f"{fn} is not an activity"
            names.add(defn.name)
        return names
