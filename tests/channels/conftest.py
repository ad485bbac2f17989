"""One real Synapse per test module that asks for it (tests/channels/synapse.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.channels.synapse import PASSWORDS, Synapse, require_synapse


@pytest.fixture(scope="module")
def synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synapse]:
    require_synapse()
    server = Synapse(tmp_path_factory.mktemp("synapse")).start()
    try:
        for name, password in PASSWORDS.items():
            server.register(name, password)
        yield server
    finally:
        server.stop()
