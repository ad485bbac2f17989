"""A secret in an MCP server's ``headers``: the streamable-HTTP test server refuses every request
without the real bearer token, the worker fills the ``{{secret:NAME}}`` placeholder from its own
``AGENT_SECRET_NAME``, and the task's history never holds the value."""

from __future__ import annotations

import uuid

from activities.mcp import McpActivities, McpCatalog
from activities.mcp_sessions import McpSessions
from contracts.mcp import McpListInput, McpServerConfig
from contracts.task import TaskState
from fakes.scripted import tool
from runtime.secrets import SecretStore
from tests import configured
from tests.mcp_support import kit_http, marks
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start, tool_messages

PLACEHOLDER = "Bearer {{secret:MCP_TOKEN}}"


def offered(request: dict) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools", [])}


async def test_a_header_secret_reaches_the_http_server_and_never_the_history(
    client, task_queue, workspace, tmp_path, monkeypatch
):
    secret = f"mcp-token-{uuid.uuid4().hex}"
    monkeypatch.setenv("AGENT_SECRET_MCP_TOKEN", secret)  # the worker's secret, read when it is built
    marker = tmp_path / "marker"
    steps = [
        tool("mcp__kit__authorization"),
        tool("message", type="result", text="authorized"),
    ]
    with kit_http(marker, flags=["--auth", secret]) as url:
        servers = {"kit": {"type": "http", "url": url, "headers": {"Authorization": PLACEHOLDER}}}
        async with scripted_worker(client, task_queue, steps) as model:
            # A server the task adds over HTTP is the network: the task needs --network for it.
            handle = await start(client, task_queue, make_input(workspace, mcp_servers=servers, network=True))
            outcome = await outcome_of(handle)
    model.assert_consumed()
    assert outcome.status == TaskState.DONE, outcome.error
    # The server refuses any request whose header is not "Bearer <secret>": that it listed its
    # tools and answered the call means the worker sent the real value, every time.
    assert marks(marker, "auth_refused") == 0
    assert "mcp__kit__authorization" in offered(model.requests[0])
    # It echoed the header it got; the tool activity redacted the value on the way back.
    assert f"Authorization: {PLACEHOLDER}" in tool_messages(model.requests[1])[0]["content"]
    assert all(secret not in str(request) for request in model.requests)

    history = await handle.fetch_history()
    events = [event.SerializeToString() for event in history.events]
    assert not [e for e in events if secret.encode() in e]
    assert secret not in history.to_json()
    # The payloads are plain JSON here (no codec), so the check above reads them: the task's
    # configuration and the tool's result hold the placeholder.
    assert sum(PLACEHOLDER.encode() in e for e in events) >= 2


async def test_without_the_secret_the_placeholder_is_sent_as_it_is_and_refused(tmp_path):
    marker = tmp_path / "marker"
    with kit_http(marker, flags=["--auth", f"mcp-token-{uuid.uuid4().hex}"]) as url:
        config = McpServerConfig(type="http", url=url, headers={"Authorization": PLACEHOLDER})
        sessions = McpSessions(SecretStore({}), log_dir=tmp_path / "logs", egress=configured.settings().egress)
        try:
            listing = await McpActivities(sessions, McpCatalog()).list_tools(
                McpListInput(task_id="t", context_id="c", servers={"kit": config}, network=True))
        finally:
            await sessions.close()
    assert set(listing.errors) == {"kit"} and not listing.tools
    assert marks(marker, "auth_refused") >= 1
