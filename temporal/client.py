"""Connecting to Temporal: the embedded dev server by default, a real cluster when configured.

A real cluster is configured the way Temporal's own tools are: ``TEMPORAL_ADDRESS``,
``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, ``TEMPORAL_TLS*`` and profiles
(``TEMPORAL_PROFILE``, ``TEMPORAL_CONFIG_FILE``), read by the SDK's envconfig.
"""

from __future__ import annotations

import os

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.envconfig import ClientConfig

from temporal.server import EMBEDDED_HOST, EMBEDDED_PORT, EMBEDDED_UI_PORT, ensure_embedded_server


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
    config["data_converter"] = pydantic_data_converter
    target = config.get("target_host")
    try:
        return await Client.connect(**config)
    except RuntimeError as err:
        raise TemporalUnavailable(f"cannot reach Temporal at {target}: {err}") from None
