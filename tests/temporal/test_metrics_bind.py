"""Where a worker's Prometheus endpoint listens: this host only, unless the operator says
otherwise (``AGENT_METRICS_HOST``). Read from the kernel's socket table, as ``ss`` does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from core.settings import WorkerSettings
from temporal.metrics import metrics_runtime
from tests.ports import free_port

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/net/tcp")
LISTEN = "0A"


def listening_on(port: int) -> set[str]:
    """The IPv4 addresses a socket listens on ``port`` at, from /proc/net/tcp."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == LISTEN and int(hex_port, 16) == port:
            found.add(".".join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0)))  # little-endian
    return found


@pytest.mark.parametrize(("env", "address"), [({}, "127.0.0.1"), ({"AGENT_METRICS_HOST": "0.0.0.0"}, "0.0.0.0")])
def test_the_metrics_endpoint_listens_on_localhost_unless_told_otherwise(env, address):
    port = free_port()
    _runtime = metrics_runtime(port, WorkerSettings.from_env(env).metrics_host)  # serving while it lives
    assert listening_on(port) == {address}
