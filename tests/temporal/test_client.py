"""Links to the Temporal UI point where the UI is: the port a server really serves it on."""

from __future__ import annotations

import asyncio
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from core.settings import TemporalSettings
from temporal.client import is_embedded, ui_base_url
from temporal.server import start_dev_command, temporal_cli
from tests.ports import free_embedded_port


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"TEMPORAL_UI_URL": "https://ui.example/"}, "https://ui.example"),
        ({"TEMPORAL_ADDRESS": "127.0.0.1:7233"}, "http://127.0.0.1:8233"),
        ({"TEMPORAL_ADDRESS": "localhost:7234"}, "http://localhost:8234"),  # a dev server's UI: its port + 1000
        ({"TEMPORAL_ADDRESS": "[::1]:7300"}, "http://[::1]:8300"),
        ({"TEMPORAL_ADDRESS": "localhost"}, "http://localhost:8233"),  # Temporal's default port
        ({"TEMPORAL_ADDRESS": "prod.tmprl.cloud:7233"}, "https://cloud.temporal.io"),
        ({"TEMPORAL_ADDRESS": "127.0.0.1:7233", "TEMPORAL_UI_URL": "http://ui:8080"}, "http://ui:8080"),
        ({}, "http://127.0.0.1:8233"),  # the embedded server
    ],
)
def test_the_ui_link_follows_the_configured_ui_then_a_local_address(env, expected):
    assert ui_base_url(TemporalSettings.from_env(env)) == expected


def test_the_embedded_server_is_used_when_no_address_is_set():
    assert not is_embedded(TemporalSettings.from_env({"TEMPORAL_ADDRESS": "prod.tmprl.cloud:7233"}))
    assert is_embedded(TemporalSettings.from_env({"TEMPORAL_ADDRESS": " "}))
    assert is_embedded(TemporalSettings.from_env({}))


def test_the_embedded_servers_link_is_the_ui_port_it_is_started_with():
    port = ui_base_url(TemporalSettings.from_env({})).rsplit(":", 1)[1]
    command = start_dev_command(Path("temporal.db"))
    assert command[command.index("--ui-port") + 1] == port


async def test_a_link_to_a_local_dev_server_on_another_port_opens_its_ui():
    port = free_embedded_port()
    server = subprocess.Popen(
        [temporal_cli(), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port), "--log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        link = ui_base_url(TemporalSettings.from_env({"TEMPORAL_ADDRESS": f"127.0.0.1:{port}"}))
        assert link == f"http://127.0.0.1:{port + 1000}"
        page = await asyncio.to_thread(fetch_when_up, f"{link}/namespaces/default/workflows")
        assert "<html" in page.lower()
    finally:
        server.terminate()
        server.wait(10)


def fetch_when_up(url: str, tries: int = 150) -> str:
    for _ in range(tries):
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.read().decode(errors="replace")
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing served {url}")
