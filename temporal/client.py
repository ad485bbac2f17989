"""Connecting to Temporal: the embedded dev server by default, a real cluster when configured.

A real cluster is configured the way Temporal's own tools are: ``--address``,
``--namespace``, ``--profile``, ``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``,
``TEMPORAL_API_KEY``, ``TEMPORAL_TLS*`` and profiles (``TEMPORAL_PROFILE``,
``TEMPORAL_CONFIG_FILE``), read by the SDK's envconfig (temporal/connection.py). No address
from any of them: the embedded server.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.runtime import Runtime
from temporalio.service import RPCError, RPCStatusCode

from core.settings import Settings, TemporalSettings
from temporal.codec import codec_for, data_converter
from temporal.connection import connect_config
from temporal.server import EMBEDDED_HOST, EMBEDDED_PORT, SEARCH_ATTRIBUTES, ensure_embedded_server, ui_port
from temporal.tracing import configure_tracing, interceptors


class TemporalUnavailable(RuntimeError):
    pass


def is_embedded(settings: TemporalSettings) -> bool:
    """No address (``temporal.connection.resolve``): the embedded dev server."""
    return settings.embedded


LOCAL_HOSTS = ("localhost", "127.", "::1", "[::1]")
# `temporal server start-dev` serves its UI on its gRPC port + 1000 unless told otherwise.
DEV_UI_OFFSET = 1000


def ui_base_url(settings: TemporalSettings) -> str:
    """Where a task's page is: ``TEMPORAL_UI_URL`` when set; the embedded server's UI (the port
    it is started with); for another local address, the UI a dev server on that port serves
    (its port + 1000: ``localhost:7234`` has its UI on 8234); Temporal Cloud otherwise."""
    if settings.ui_url:
        return settings.ui_url.rstrip("/")
    if settings.embedded:
        return f"http://{EMBEDDED_HOST}:{ui_port(settings.embedded_port)}"
    host, port = host_and_port(settings.address or "")
    if host.startswith(LOCAL_HOSTS):
        return f"http://{host}:{port + DEV_UI_OFFSET}"
    return "https://cloud.temporal.io"


def host_and_port(address: str) -> tuple[str, int]:
    """``host:port`` split, IPv6 hosts in brackets; no port: Temporal's default."""
    host, _, port = address.rpartition(":")
    if not port.isdigit() or (":" in host and not host.startswith("[")):
        host, port = address, str(EMBEDDED_PORT)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return host, int(port)


async def connect(settings: Settings, *, start_embedded: bool = True, runtime: Runtime | None = None) -> Client:
    """A client of the cluster ``settings.temporal`` names (or the embedded server, its files in
    ``settings.paths``), with the codec and tracing they configure."""
    config = connect_config(settings.temporal)  # the profile's, under the options and TEMPORAL_*
    embedded = settings.temporal.embedded
    if embedded and start_embedded:
        await ensure_embedded_server(settings.paths, port=settings.temporal.embedded_port,
                                           codec=codec_for(settings.codec) is not None)
    config["data_converter"] = data_converter(codec_for(settings.codec))
    configure_tracing(settings.tracing)  # off (and free) unless an OTLP endpoint or AGENT_TRACE_FILE is set
    config["interceptors"] = interceptors()
    if runtime is not None:  # a worker's, exporting its metrics (temporal/metrics.py)
        config["runtime"] = runtime
    target = config.get("target_host")
    try:
        client = await (connect_when_up(**config) if embedded else Client.connect(**config))
    except RuntimeError as err:
        raise TemporalUnavailable(f"cannot reach Temporal at {target}: {err}") from None
    if embedded:
        await wait_until_ready(client)
    return client


async def connect_when_up(timeout_s: float = 60.0, **config) -> Client:
    """``Client.connect``, again while a server that has just started says its frontend "is
    not healthy yet" (it opens its port first)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        try:
            return await Client.connect(**config)
        except RuntimeError as err:
            if "not healthy yet" not in str(err) or asyncio.get_running_loop().time() > deadline:
                raise
        await asyncio.sleep(0.1)


async def wait_until_ready(client: Client, timeout_s: float = 60.0) -> None:
    """Wait until the server can serve tasks, not only accept connections.

    A dev server that has just started on an existing database opens its port before its
    history shards are loaded; calls made then fail with "shard status unknown". Describing a
    workflow that does not exist touches a shard: NOT_FOUND means ready.
    """
    request = DescribeWorkflowExecutionRequest(
        namespace=client.namespace, execution=WorkflowExecution(workflow_id="agent-readiness-probe")
    )
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        try:
            await client.workflow_service.describe_workflow_execution(
                request, retry=False, timeout=timedelta(seconds=5)
            )
            return
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return
            if asyncio.get_running_loop().time() > deadline:
                raise TemporalUnavailable(f"Temporal did not become ready within {timeout_s:.0f}s: {err}") from None
        await asyncio.sleep(0.25)


async def ensure_search_attributes(client: Client, *, register: bool) -> bool:
    """True when every search attribute the project uses is registered in the namespace.

    On the embedded server missing ones are registered; on a real cluster they are
    only checked (registering needs operator rights: see docs/deployment.md), and tasks started
    without them simply do not set search attributes. ``register``: ``is_embedded``.
    """
    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
    except RPCError:
        return False
    missing = {name: kind for name, kind in SEARCH_ATTRIBUTES.items() if name not in listed.custom_attributes}
    if missing and register:
        try:
            await client.operator_service.add_search_attributes(
                AddSearchAttributesRequest(
                    namespace=client.namespace,
                    search_attributes={
                        name: IndexedValueType.Value(f"INDEXED_VALUE_TYPE_{kind.upper()}")
                        for name, kind in missing.items()
                    },
                )
            )
        except RPCError:
            return False
        return True
    return not missing
