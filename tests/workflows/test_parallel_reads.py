"""A reply's reads run together (workflows/parallel.py): real dev server, real worker, the
model a scripted HTTP server; overlap is read from the workflow's history, never timed."""

from __future__ import annotations

import asyncio
import json

import pytest

from contracts.activities import TOOL_ACTIVITY
from contracts.task import ApprovalDecision, ApprovalMode, Interjection, TaskState
from core.settings import ProviderSettings
from fakes.scripted import ScriptedModelServer, tool
from fakes.step import Step
from tests import configured
from tests.mcp_support import kit_stdio
from tests.workflows.harness import make_input, outcome_of, start, tool_messages, wait_for_state
from tests.workflows.test_task_loop import assert_every_tool_call_answered
from worker import build_worker
from workflows.task import AgentTaskWorkflow

FILES = [f"{name}.txt" for name in "abcde"]


def read(path: str) -> tuple[str, dict]:
    return ("file", {"action": "read", "path": path})


def _summary(event) -> str:
    return json.loads(event.user_metadata.summary.data)


async def tool_activities(handle) -> list[tuple[str, str]]:
    """The tool activities in history order: ("scheduled" | "completed", summary)."""
    names: dict[int, str] = {}
    order: list[tuple[str, str]] = []
    for event in (await handle.fetch_history()).events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            if event.activity_task_scheduled_event_attributes.activity_type.name == TOOL_ACTIVITY:
                names[event.event_id] = _summary(event)
                order.append(("scheduled", names[event.event_id]))
        elif event.HasField("activity_task_completed_event_attributes"):
            scheduled = event.activity_task_completed_event_attributes.scheduled_event_id
            if scheduled in names:
                order.append(("completed", names[scheduled]))
    return order


def run_in_history(order: list[tuple[str, str]], summaries: list[str]) -> tuple[int, int, int]:
    """(last schedule, first completion, last completion) positions of these activities."""
    scheduled = [i for i, (what, s) in enumerate(order) if what == "scheduled" and s in summaries]
    completed = [i for i, (what, s) in enumerate(order) if what == "completed" and s in summaries]
    assert len(scheduled) == len(completed) == len(summaries)
    return max(scheduled), min(completed), max(completed)


@pytest.mark.parametrize("local_tools", [False, True], ids=["activities", "local"])
async def test_five_reads_run_at_once_then_the_command_alone_and_the_model_gets_six_results_in_order(
        client, task_queue, workspace, local_tools):
    for i, name in enumerate(FILES):
        (workspace / name).write_text(f"content of file {i}\n")
    steps = [
        Step(tool_calls=[*(read(p) for p in FILES), ("shell", {"command": "echo ran after the reads"})]),
        tool("message", type="result", text="read them"),
    ]
    with ScriptedModelServer(steps) as model:
        settings = ProviderSettings(openai_base_url=model.url, openai_api_key="k")
        async with build_worker(client, queue=task_queue, settings=settings, local_tools=local_tools, config=configured.settings()):
            handle = await start(client, task_queue, make_input(workspace, "read the files"))
            outcome = await outcome_of(handle)
        model.assert_consumed()
    assert outcome.status == TaskState.DONE and outcome.turns == 2
    request = model.requests[1]
    assert_every_tool_call_answered(request)
    results = tool_messages(request)
    assert [m["tool_call_id"] for m in results] == [f"call_1_{i}" for i in range(6)]  # the order it asked
    for i, message in enumerate(results[:5]):
        assert f"content of file {i}" in message["content"]
    assert "ran after the reads" in results[5]["content"]
    order = await tool_activities(handle)
    shell = [i for i, entry in enumerate(order) if entry[1] == "tool · shell · echo ran after the reads"]
    if local_tools:
        assert [s for _, s in order] == ["tool · shell · echo ran after the reads"] * 2  # the reads were local
        return
    reads = [f"tool · file · read {p}" for p in FILES]
    last_scheduled, first_done, last_done = run_in_history(order, reads)
    assert last_scheduled < first_done  # all five were started before any finished: they overlapped
    assert shell == [last_done + 1, last_done + 2]  # then the command, alone


async def test_a_read_after_a_write_sees_the_write_and_later_changes_are_deferred(client, task_queue, workspace):
    steps = [
        Step(tool_calls=[
            ("file", {"action": "list", "path": "."}),
            ("file", {"action": "write", "path": "new.txt", "content": "fresh"}),
            read("new.txt"), ("file", {"action": "grep", "pattern": "fresh"}),
            ("shell", {"command": "echo never"}), read("new.txt"),
        ]),
        tool("message", type="result", text="done"),
    ]
    with ScriptedModelServer(steps) as model:
        settings = ProviderSettings(openai_base_url=model.url, openai_api_key="k")
        async with build_worker(client, queue=task_queue, settings=settings, local_tools=False, config=configured.settings()):
            handle = await start(client, task_queue, make_input(workspace))
            outcome = await outcome_of(handle)
        model.assert_consumed()
    assert outcome.status == TaskState.DONE
    results = tool_messages(model.requests[1])
    assert "new.txt" not in results[0]["content"]  # listed before the write
    assert "fresh" in results[2]["content"] and "new.txt" in results[3]["content"]  # read and grep after it
    assert ["deferred" in m["content"] for m in results] == [False] * 4 + [True] * 2
    order = await tool_activities(handle)
    last_scheduled, first_done, _ = run_in_history(order, ["tool · file · read new.txt", "tool · file · grep fresh"])
    assert last_scheduled < first_done


async def test_reads_run_one_after_another_with_max_parallel_one(client, task_queue, workspace):
    for name in FILES[:3]:
        (workspace / name).write_text(f"body of {name}")
    steps = [Step(tool_calls=[read(p) for p in FILES[:3]]), tool("message", type="result", text="done")]
    with ScriptedModelServer(steps) as model:
        settings = ProviderSettings(openai_base_url=model.url, openai_api_key="k")
        async with build_worker(client, queue=task_queue, settings=settings, local_tools=False, config=configured.settings()):
            handle = await start(client, task_queue, make_input(workspace, max_parallel=1))
            outcome = await outcome_of(handle)
        model.assert_consumed()
    assert outcome.status == TaskState.DONE
    assert [f"body of {p}" in m["content"] for m, p in zip(tool_messages(model.requests[1]), FILES[:3], strict=True)] == [True] * 3
    order = await tool_activities(handle)
    assert [what for what, _ in order[:6]] == ["scheduled", "completed"] * 3  # never two at once


async def test_a_read_that_needs_approval_never_runs_in_parallel(client, task_queue, workspace):
    """Approval mode ``always``: every call waits for a person, so each runs alone."""
    for name in FILES[:2]:
        (workspace / name).write_text(name)
    steps = [Step(tool_calls=[read(p) for p in FILES[:2]]), tool("message", type="result", text="done")]
    with ScriptedModelServer(steps) as model:
        settings = ProviderSettings(openai_base_url=model.url, openai_api_key="k")
        async with build_worker(client, queue=task_queue, settings=settings, local_tools=False, config=configured.settings()):
            handle = await start(client, task_queue, make_input(workspace, approval=ApprovalMode.ALWAYS))
            for _ in range(2):  # the read, then the final message
                pending = (await wait_for_state(handle, TaskState.WAITING_APPROVAL)).pending_approval
                assert pending is not None
                await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(approved=True, digest=pending.digest))
            outcome = await outcome_of(handle)
        model.assert_consumed()
    assert outcome.status == TaskState.DONE
    results = tool_messages(model.requests[1])
    assert FILES[0] in results[0]["content"] and "deferred" in results[1]["content"]


async def test_mcp_reads_run_together_and_a_call_needing_approval_runs_alone_after_them(client, task_queue, workspace):
    """The test server's ``echo`` is annotated read-only, but the configuration asks approval
    for it: it waits alone, after the read-only calls before it ran together."""
    server = kit_stdio(approve=["echo"])
    steps = [
        Step(tool_calls=[("mcp__kit__slow", {"seconds": 0.2}), ("mcp__kit__weather", {"city": "Oslo"}),
                         ("mcp__kit__echo", {"text": "approved"})]),
        tool("message", type="result", text="done"),
    ]
    with ScriptedModelServer(steps) as model:
        settings = ProviderSettings(openai_base_url=model.url, openai_api_key="k")
        async with build_worker(client, queue=task_queue, settings=settings, config=configured.settings()):
            handle = await start(client, task_queue, make_input(workspace, mcp_servers={"kit": server}))
            pending = (await wait_for_state(handle, TaskState.WAITING_APPROVAL)).pending_approval
            assert pending is not None and pending.tool == "mcp__kit__echo"
            order = await tool_activities(handle)
            assert [what for what, _ in order] == ["scheduled", "scheduled", "completed", "completed"]
            await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(approved=True, digest=pending.digest))
            outcome = await outcome_of(handle)
        model.assert_consumed()
    assert outcome.status == TaskState.DONE
    results = tool_messages(model.requests[1])
    assert [m["tool_call_id"] for m in results] == ["call_1_0", "call_1_1", "call_1_2"]
    assert "approved" in results[2]["content"]
    order = await tool_activities(handle)
    assert [what for what, _ in order[4:]] == ["scheduled", "completed"]  # the approved call, alone


async def test_an_interjection_cancels_every_read_that_runs(client, task_queue, workspace):
    steps = [
        Step(tool_calls=[("mcp__kit__slow", {"seconds": 60}), ("mcp__kit__slow", {"seconds": 61})]),
        tool("message", type="result", text="stopped reading"),
    ]
    with ScriptedModelServer(steps) as model:
        settings = ProviderSettings(openai_base_url=model.url, openai_api_key="k")
        async with build_worker(client, queue=task_queue, settings=settings, config=configured.settings()):
            handle = await start(client, task_queue, make_input(workspace, mcp_servers={"kit": kit_stdio()}))
            await wait_for_state(handle, TaskState.EXECUTING_TOOL)
            while [what for what, _ in await tool_activities(handle)] != ["scheduled", "scheduled"]:
                await asyncio.sleep(0.05)
            await handle.signal(AgentTaskWorkflow.interject, Interjection(text="never mind"))
            outcome = await outcome_of(handle)
        model.assert_consumed()
    assert outcome.status == TaskState.DONE
    request = model.requests[1]
    assert_every_tool_call_answered(request)
    assert ["[interrupted]" in m["content"] for m in tool_messages(request)] == [True, True]
    assert request["messages"][-1] == {"role": "user", "content": "never mind"}
    events = (await handle.fetch_history()).events
    assert sum(e.HasField("activity_task_cancel_requested_event_attributes") for e in events) == 2
