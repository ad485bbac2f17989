"""The worker's sandbox (temporal/sandbox.py) gives every payload the same serialization
context as the SDK's stock sandbox, without re-entering the sandbox to look it up."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from temporalio import activity, workflow
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import (
    ActivitySerializationContext,
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from temporal.plugin import SANDBOX_RESTRICTIONS
from temporal.sandbox import LeanSandboxedWorkflowRunner, _LeanInstance

SEEN: list[tuple[str, str]] = []  # (direction, context) for every payload the codec saw


def _describe(context: SerializationContext | None) -> str:
    if isinstance(context, ActivitySerializationContext):
        return f"activity {context.activity_type} {context.activity_id} {context.workflow_id} {context.is_local}"
    if isinstance(context, WorkflowSerializationContext):
        return f"workflow {context.workflow_id}"
    return repr(context)


class RecordingCodec(PayloadCodec, WithSerializationContext):
    """Leaves payloads as they are and records the context each batch came with."""

    def __init__(self, context: SerializationContext | None = None) -> None:
        self.context = context

    def with_context(self, context: SerializationContext) -> RecordingCodec:
        return RecordingCodec(context)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        SEEN.extend(("encode", _describe(self.context)) for _ in payloads)
        return list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        SEEN.extend(("decode", _describe(self.context)) for _ in payloads)
        return list(payloads)


@activity.defn(name="sandbox_echo")
async def echo(text: str) -> str:
    return text.upper()


@workflow.defn(name="SandboxContexts")
class SandboxContexts:
    @workflow.run
    async def run(self, text: str) -> str:
        first = await workflow.execute_activity(echo, text, start_to_close_timeout=timedelta(seconds=30),
                                                summary=f"echo · {text}")
        second = await workflow.execute_activity(echo, first + "!", start_to_close_timeout=timedelta(seconds=30))
        return second


async def _contexts(client: Client, runner: SandboxedWorkflowRunner, workflow_id: str) -> list[tuple[str, str]]:
    recording = Client(client.service_client, namespace=client.namespace, data_converter=dataclasses.replace(
        client.data_converter, payload_codec=RecordingCodec()))
    queue = f"sandbox-{uuid.uuid4().hex[:8]}"
    SEEN.clear()
    async with Worker(recording, task_queue=queue, workflows=[SandboxContexts], activities=[echo],
                      workflow_runner=runner):
        result = await recording.execute_workflow(SandboxContexts.run, "hi", id=workflow_id, task_queue=queue)
    assert result == "HI!"
    return list(SEEN)


async def test_the_lean_sandbox_gives_every_payload_the_stock_sandboxs_context(client: Client) -> None:
    restrictions = SANDBOX_RESTRICTIONS.with_passthrough_modules("tests")
    workflow_id = f"sandbox-contexts-{uuid.uuid4().hex[:8]}"
    stock = await _contexts(client, SandboxedWorkflowRunner(restrictions=restrictions), workflow_id)
    lean = await _contexts(client, LeanSandboxedWorkflowRunner(restrictions=restrictions), workflow_id)
    assert lean == stock
    # Not vacuous: the activities' inputs and the summary went out with the activity's own
    # context, which only the workflow instance (inside the sandbox) can give.
    assert ("encode", f"activity sandbox_echo 1 {workflow_id} False") in lean
    assert ("encode", f"activity sandbox_echo 2 {workflow_id} False") in lean
    assert ("encode", f"workflow {workflow_id}") in lean


def test_the_lean_instance_falls_back_to_the_stock_lookup_without_the_in_sandbox_object() -> None:
    calls: list[Any] = []

    class Probe(_LeanInstance):
        def __init__(self) -> None:  # no workflow: only the lookup is under test
            self.globals_and_locals = {}
            self.importer = SimpleNamespace(restriction_context=SimpleNamespace(is_runtime=False))

        def _run_code(self, code: str, **extra_globals: Any) -> None:
            calls.append(code)

    probe = Probe()
    probe.get_serialization_context(None)
    probe.get_external_store_context(None)
    assert len(calls) == 2 and all("__temporal_in_sandbox.get_" in c for c in calls)
