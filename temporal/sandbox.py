"""The workflow sandbox the worker runs tasks in: the SDK's own, with one cost taken out.

Since temporalio 1.35 every payload a workflow activation carries (each activity's
input and result, each activity summary) is visited three times on the way out
and twice on the way in, and each visit asks the workflow instance for the
payload's serialization context. The stock sandboxed instance answers by
``exec``-ing a line of code inside the sandbox with its importer applied (swapping
``sys.modules`` and the builtins in and out): about 19 of those per turn of a
task, which cost the worker more CPU than all of the agent's own code.

The answer itself is plain data: the in-sandbox workflow instance builds a frozen
``WorkflowSerializationContext`` or ``ActivitySerializationContext`` from its own
info and its pending commands, importing nothing and calling nothing restricted.
``LeanSandboxedWorkflowRunner`` asks that instance directly. Workflow code still
runs only inside the sandbox, with the same restrictions and passthrough modules:
activations, queries, signals and updates go through the stock path.

It relies on one private detail of the pinned SDK (the in-sandbox object the
stock instance keeps under ``__temporal_in_sandbox``); when that is missing it
falls back to the stock path, and ``tests/workflows/test_sandbox.py`` checks both
give the same contexts for the same commands.
"""

from __future__ import annotations

from typing import Any

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox._runner import _Instance

IN_SANDBOX = "__temporal_in_sandbox"


class _LeanInstance(_Instance):
    """The stock sandboxed instance, answering serialization-context lookups without ``exec``."""

    def _in_sandbox(self) -> Any:
        return self.globals_and_locals.get(IN_SANDBOX)

    def get_serialization_context(self, command_info: Any) -> Any:
        inner = self._in_sandbox()
        if inner is None:
            return super().get_serialization_context(command_info)
        return inner.get_serialization_context(command_info)

    def get_external_store_context(self, command_info: Any) -> Any:
        inner = self._in_sandbox()
        if inner is None:
            return super().get_external_store_context(command_info)
        return inner.get_external_store_context(command_info)


class LeanSandboxedWorkflowRunner(SandboxedWorkflowRunner):
    """``SandboxedWorkflowRunner`` whose instances look up serialization contexts directly."""

    def create_instance(self, det: Any) -> Any:
        return _LeanInstance(det, self.runner_class, self.restrictions)
