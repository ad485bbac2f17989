"""Connecting to Temporal: the embedded dev server by default, a real cluster when configured.

A real cluster is configured the way Temporal's own tools are: ``TEMPORAL_ADDRESS``,
``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, ``TEMPORAL_TLS*`` and profiles
(``TEMPORAL_PROFILE``, ``TEMPORAL_CONFIG_FILE``), read by the SDK's envconfig.
"""

from __future__ import annotations

import os

from temporalio.client import Client
from temporal.codec import codec_from_env, data_converter
from temporal.tracing import configure_tracing, interceptors
from temporalio.envconfig import ClientConfig

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.service import RPCError

from temporal.server import (
    EMBEDDED_HOST,
    EMBEDDED_PORT,
    EMBEDDED_UI_PORT,
    SEARCH_ATTRIBUTES,
    ensure_embedded_server,
)


class TemporalUnavailable(RuntimeError):
    pass


def is_embedded() -> bool:
    return not os.environ.get("TEMPORAL_ADDRESS")


def ui_base_url() -> str:
    if is_embedded():
        return f"http://{EMBEDDED_HOST}:{EMBEDDED_UI_PORT}"
    return os.environ.get("TEMPORAL_UI_URL", "https://cloud.temporal.io")


async def connect(*, start_embedded: bool = True) -> Client:
    config = dict(ClientConfig.load_client_connect_config())
    if is_embedded():
        if start_embedded:
            await ensure_embedded_server()
        config["target_host"] = f"{EMBEDDED_HOST}:{EMBEDDED_PORT}"
        config.setdefault("namespace", "default")
    config["data_converter"] = data_converter(codec_from_env())
    configure_tracing()  # off (and free) unless OTEL_EXPORTER_OTLP_ENDPOINT or AGENT_TRACE_FILE is set
    config["interceptors"] = interceptors()
    target = config.get("target_host")
    try:
        return await Client.connect(**config)
    except RuntimeError as err:
        raise TemporalUnavailable(f"cannot reach Temporal at {target}: {err}") from None


async def ensure_search_attributes(client: Client, *, register: bool | None = None) -> bool:
    """True when every search attribute the project uses is registered in the namespace.

    On the embedded server missing ones are registered; on a real cluster they are
    only checked (registering needs operator rights: see README), and tasks started
    without them simply do not set search attributes.
    """
    register = is_embedded() if register is None else register
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
