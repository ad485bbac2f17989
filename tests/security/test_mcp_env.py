"""A stdio MCP server gets its config's ``env`` and the minimum to start, never the rest of
the worker's environment (the ``mcp`` SDK's ``get_default_environment``, which this pins)."""

from __future__ import annotations

import pytest

from activities.mcp import McpToolRunner
from activities.mcp_sessions import McpSessions
from contracts.mcp import McpCall
from runtime.secrets import SecretStore
from tests import configured
from tests.mcp_support import kit_stdio

WORKERS_OWN = {
    "DATABASE_URL": "postgresql://app:hunter2@db.internal/app",
    "GH_PAT": "github_pat_x",
    "AGENT_CONTEXT_DB": "postgresql://agent:pw@db.internal/context",
    "OPENAI_API_KEY": "sk-openai",
}


@pytest.fixture
async def sessions(tmp_path, monkeypatch):
    for name, value in WORKERS_OWN.items():
        monkeypatch.setenv(name, value)
    found = McpSessions(SecretStore({}), log_dir=tmp_path / "logs", egress=configured.settings().egress)
    yield found
    await found.close()


async def _env_var(sessions: McpSessions, name: str, **config) -> str:
    call = McpCall(server="kit", tool="env_var", config=kit_stdio(**config))
    result = await McpToolRunner(sessions).run(call, {"name": name}, lambda text: text)
    return result.content


async def test_a_stdio_server_sees_its_config_env_and_not_the_workers(sessions):
    for name in WORKERS_OWN:
        assert f"{name}=(unset)" in await _env_var(sessions, name, env={"SERVER_SETTING": "on"})
    assert "SERVER_SETTING=on" in await _env_var(sessions, "SERVER_SETTING", env={"SERVER_SETTING": "on"})
    assert "PATH=(unset)" not in await _env_var(sessions, "PATH", env={"SERVER_SETTING": "on"})
