"""MCP tools in real tasks: real servers (mcp-server-time, mcp-server-git, the test server over
stdio and streamable HTTP), a real Temporal dev server, the model scripted."""

from __future__ import annotations

import asyncio
import subprocess

from temporalio.worker import Replayer

from contracts.task import ApprovalDecision, TaskState
from fakes.scripted import tool
from fakes.step import Step
from temporal.plugin import AgentPlugin
from tests.mcp_support import git_server, kit_http, kit_stdio, marks, time_server
from tests.workflows.harness import (
    make_input,
    outcome_of,
    run_task,
    scripted_worker,
    start,
    tool_messages,
    wait_for_state,
)
from workflows.task import AgentTaskWorkflow


def offered(request: dict) -> dict[str, dict]:
    return {t["function"]["name"]: t["function"] for t in request.get("tools", [])}


async def test_a_stdio_tool_and_a_streamable_http_tool_reach_the_model(client, task_queue, workspace, tmp_path):
    steps = [
        tool("mcp__time__get_current_time", timezone="Europe/Paris"),
        tool("mcp__kit__echo", text="over http"),
        tool("message", type="result", text="both answered"),
    ]
    with kit_http() as url:
        servers = {"time": time_server(), "kit": {"type": "http", "url": url}}
        async with scripted_worker(client, task_queue, steps) as model:  # an HTTP server: --network
            outcome = await run_task(client, task_queue, make_input(workspace, mcp_servers=servers, network=True))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE, outcome.error
    tools = offered(model.requests[0])
    assert tools["mcp__time__get_current_time"]["parameters"]["required"] == ["timezone"]
    assert "mcp__kit__echo" in tools and "shell" in tools
    results = [m["content"] for m in tool_messages(model.requests[2])]
    assert '"timezone": "Europe/Paris"' in results[0]
    assert '<untrusted_content source="mcp:time/get_current_time">' in results[0]
    assert "echo: over http" in results[1]


async def test_a_destructive_tool_waits_and_a_denied_call_never_reaches_the_server(
    client, task_queue, workspace, tmp_path
):
    marker = tmp_path / "marker"
    steps = [
        tool("mcp__kit__delete_everything", path="/"),
        tool("message", type="result", text="gave up"),
    ]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace, mcp_servers={"kit": kit_stdio(marker)}))
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL, 60)
        assert status.pending_approval.tool == "mcp__kit__delete_everything"
        assert "destructive" in status.pending_approval.reason
        await handle.signal(AgentTaskWorkflow.approve, ApprovalDecision(
            approved=False, digest=status.pending_approval.digest, reason="no"))
        outcome = await outcome_of(handle)
    model.assert_consumed()
    assert outcome.status == TaskState.DONE
    assert "denied" in tool_messages(model.requests[1])[0]["content"]
    assert marks(marker, "delete_everything") == 0


async def test_server_failures_become_tool_errors_and_the_task_goes_on(client, task_queue, workspace, tmp_path):
    marker = tmp_path / "marker"
    steps = [
        tool("mcp__kit__exit_now"),
        tool("mcp__kit__echo", text="after the crash"),
        tool("mcp__kit__protocol_error"),
        tool("mcp__kit__hang"),
        tool("mcp__kit__echo", text="still here"),
        tool("message", type="result", text="survived"),
    ]
    kit = kit_stdio(marker, timeout_s=2)
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await asyncio.wait_for(
            run_task(client, task_queue, make_input(workspace, mcp_servers={"kit": kit}, approval="never")), 120)
    model.assert_consumed()
    assert outcome.status == TaskState.DONE
    results = [m["content"] for m in tool_messages(model.requests[-1])]
    assert results[0].startswith("[interrupted]") and "closed the connection" in results[0]
    assert "echo: after the crash" in results[1]  # restarted
    assert "(-32603)" in results[2] and "internal failure in the test server" in results[2]
    assert results[3].startswith("[mcp timeout]") and "2 s" in results[3]
    assert "echo: still here" in results[4]
    assert marks(marker, "exit_now") == 1  # reported, never run again


async def test_tools_are_listed_again_when_a_server_says_its_list_changed(client, task_queue, workspace):
    steps = [
        tool("mcp__kit__grow"),
        tool("mcp__kit__extra"),
        tool("message", type="result", text="grew"),
    ]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace, mcp_servers={"kit": kit_stdio()},
                                                            approval="never"))
        outcome = await outcome_of(handle)
    model.assert_consumed()
    assert outcome.status == TaskState.DONE
    history = await client.get_workflow_handle(handle.id).fetch_history()
    replayed = await Replayer(workflows=[], plugins=[AgentPlugin.replaying(AgentTaskWorkflow)]).replay_workflow(
        history)
    assert replayed.replay_failure is None  # the listing, and the listing again, replay as recorded
    assert "mcp__kit__extra" not in offered(model.requests[0])
    assert "mcp__kit__extra" in offered(model.requests[1])
    assert "extra here" in tool_messages(model.requests[2])[-1]["content"]


async def test_tools_are_listed_again_when_a_handshake_era_server_sends_tools_list_changed(
    client, task_queue, workspace
):
    """The legacy ``notifications/tools/list_changed`` (no ``subscriptions/listen`` before the
    2026 protocol): the test server in ``--legacy`` speaks only the handshake era."""
    steps = [
        tool("mcp__kit__grow_legacy"),
        tool("mcp__kit__extra_legacy"),
        tool("message", type="result", text="grew"),
    ]
    kit = kit_stdio(flags=["--legacy"])
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, mcp_servers={"kit": kit}, approval="never"))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE, outcome.error
    assert "mcp__kit__extra_legacy" not in offered(model.requests[0])
    assert "mcp__kit__extra_legacy" in offered(model.requests[1])
    assert "extra legacy here" in tool_messages(model.requests[2])[-1]["content"]


async def test_tool_selection_narrows_built_in_and_mcp_tools(client, task_queue, workspace):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    steps = [tool("message", type="result", text="ok")]
    inp = make_input(workspace, mcp_servers={"git": git_server(workspace)}, tools=["file", "mcp__git__*"],
                     deny_tools=["mcp__git__git_reset", "mcp__git__git_c*"])
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, inp)
    assert outcome.status == TaskState.DONE
    names = set(offered(model.requests[0]))
    assert {"message", "file", "mcp__git__git_status", "mcp__git__git_log"} <= names
    assert not names & {"shell", "mcp__git__git_reset", "mcp__git__git_commit", "mcp__git__git_checkout"}


async def test_a_task_without_mcp_servers_schedules_no_listing(client, task_queue, workspace):
    steps = [Step(tool_calls=[("message", {"type": "result", "text": "done"})])]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace))
        await outcome_of(handle)
    history = await handle.fetch_history()
    kinds = [e.activity_task_scheduled_event_attributes.activity_type.name for e in history.events
             if e.HasField("activity_task_scheduled_event_attributes")]
    assert "mcp_list_tools" not in kinds
