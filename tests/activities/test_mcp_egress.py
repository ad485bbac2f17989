"""MCP servers over HTTP under the egress policy: the deny list before any connection, and a
task's own HTTP servers only in a task started with --network (real servers on loopback)."""

from __future__ import annotations

import pytest
from temporalio.testing import ActivityEnvironment

from activities.mcp import McpActivities, McpCatalog, McpToolRunner
from activities.mcp_sessions import McpSessions, McpUnavailable
from activities.tools import ToolActivities
from contracts.activities import ToolCallInput
from contracts.mcp import McpCall, McpListInput, McpServerConfig
from core.messages import ToolCallRequest
from runtime.secrets import SecretStore
from runtime.store import ContextStore
from tests import configured
from tests.mcp_support import kit_http
from tests.tools.web_fixtures import LocalWebServer, Reply
from tools.egress import NO_NETWORK


@pytest.fixture
async def sessions(tmp_path):
    found = McpSessions(SecretStore({}), log_dir=tmp_path / "logs", egress=configured.settings().egress)
    yield found
    await found.close()


@pytest.fixture
def counting():
    """Not an MCP server: a server on 127.0.0.2 that counts what reaches it."""
    with LocalWebServer({"/mcp": Reply(body=b"{}", content_type="application/json")}, host="127.0.0.2") as server:
        yield server


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_an_http_server_on_a_denied_host_is_refused_before_anything_is_sent(tmp_path, counting, monkeypatch, kind):
    config = configured.use(monkeypatch, AGENT_DENY_HOSTS="127.0.0.2")
    sessions = McpSessions(SecretStore({}), log_dir=tmp_path / "logs", egress=config.egress)
    try:
        with pytest.raises(McpUnavailable, match=r"is refused: the host 127\.0\.0\.2 is on the deny list \(127\.0\.0\.2;"):
            await sessions.connection("denied", McpServerConfig(type=kind, url=counting.url("/mcp")))
    finally:
        await sessions.close()
    assert counting.requests == []


def _call_input(workspace, config: McpServerConfig, *, network: bool) -> ToolCallInput:
    call = ToolCallRequest(id="call_1", name="mcp__kit__echo", arguments={"text": "hello"})
    return ToolCallInput(turn=1, workspace=str(workspace), call=call, network=network, approval="never",
                         mcp=McpCall(server="kit", tool="echo", config=config))


def _activities(tmp_path, sessions: McpSessions) -> ToolActivities:
    return ToolActivities(ContextStore(tmp_path / "store.db"), SecretStore({}), configured.settings(), mcp=McpToolRunner(sessions))


async def test_a_call_of_the_tasks_own_http_server_without_network_sends_nothing(tmp_path, workspace, sessions, counting):
    config = McpServerConfig(type="http", url=counting.url("/mcp"))
    result = await ActivityEnvironment().run(
        _activities(tmp_path, sessions).run_tool, _call_input(workspace, config, network=False))
    assert result.status == "error"
    assert result.content == f"[mcp error] the task's MCP server kit is reached over HTTP, and {NO_NETWORK}"
    assert counting.requests == []


async def test_a_call_of_the_tasks_own_http_server_runs_with_network(tmp_path, workspace, sessions):
    with kit_http() as url:
        config = McpServerConfig(type="http", url=url)
        result = await ActivityEnvironment().run(
            _activities(tmp_path, sessions).run_tool, _call_input(workspace, config, network=True))
        await sessions.close()
    assert result.status == "ok" and "echo: hello" in result.content


async def test_listing_the_tasks_own_http_server_without_network_sends_nothing(sessions, counting):
    servers = {"kit": McpServerConfig(type="http", url=counting.url("/mcp"))}
    listing = await McpActivities(sessions, McpCatalog()).list_tools(
        McpListInput(task_id="t", context_id="c", servers=servers, network=False))
    assert listing.tools == [] and listing.errors == {"kit": f"the server is reached over HTTP, and {NO_NETWORK}"}
    assert counting.requests == []
    with pytest.raises(McpUnavailable):  # with --network it is contacted (and is no MCP server)
        await McpActivities(sessions, McpCatalog())._list("kit", servers["kit"])
    assert counting.requests != []
