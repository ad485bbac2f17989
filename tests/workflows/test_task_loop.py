"""The task loop end to end: real dev server, real worker, the model a scripted HTTP server."""

from __future__ import annotations

import asyncio
import time

import pytest

from contracts.task import TaskState, TaskStatus
from contracts.toolset import default_shown
from fakes.scripted import error, text, tool
from fakes.step import Step
from tests.workflows.harness import make_input, outcome_of, run_task, scripted_worker, start
from workflows.task import AgentTaskWorkflow


def assert_every_tool_call_answered(request: dict) -> None:
    """No assistant tool call is ever sent to the model without its result."""
    pending: set[str] = set()
    for message in request["messages"]:
        if message["role"] == "assistant":
            assert not pending, f"unanswered tool calls before next assistant turn: {pending}"
            pending = {c["id"] for c in message.get("tool_calls") or []}
        elif message["role"] == "tool":
            pending.discard(message["tool_call_id"])
    assert not pending, f"unanswered tool calls: {pending}"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
async def test_task_writes_file_through_shell_and_finishes_with_message(client, task_queue, workspace, stream):
    steps = [
        tool("shell", command="echo durable > out.txt && cat out.txt"),
        tool("message", type="result", text="wrote out.txt"),
    ]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, stream=stream))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE
    assert outcome.final_text == "wrote out.txt"
    assert outcome.turns == 2
    assert outcome.usage.input_tokens == 20 and outcome.usage.output_tokens == 10
    assert (workspace / "out.txt").read_text() == "durable\n"
    second = model.requests[1]
    assert second.get("stream", False) is stream
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 1 and "durable" in tool_messages[0]["content"]
    assert "[exit code: 0]" in tool_messages[0]["content"]
    assert second["messages"][0]["role"] == "system"
    assert [t["function"]["name"] for t in second["tools"]] == default_shown(page_open=False)  # no page open


async def test_reply_without_tool_call_gets_reminder_then_recovers(client, task_queue, workspace):
    steps = [text("I think I am done."), tool("message", type="result", text="ok")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE
    last = model.requests[1]["messages"]
    assert last[-2] == {"role": "assistant", "content": "I think I am done."}
    assert last[-1]["role"] == "user" and "did not call a tool" in last[-1]["content"]


async def test_task_fails_after_repeated_replies_without_tool_call(client, task_queue, workspace):
    steps = [text("no"), text("still no"), text("never")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, max_no_tool_retries=2))
    model.assert_consumed()
    assert outcome.status == TaskState.FAILED
    assert "without a tool call" in (outcome.error or "")
    assert outcome.turns == 3


async def test_task_fails_when_max_iterations_is_reached(client, task_queue, workspace):
    steps = [tool("shell", command=f"echo {i}") for i in range(3)]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, max_iterations=3))
    model.assert_consumed()
    assert outcome.status == TaskState.FAILED
    assert "maximum of 3 iterations" in (outcome.error or "")
    assert outcome.turns == 3


async def test_unknown_tool_becomes_error_result_and_task_recovers(client, task_queue, workspace):
    steps = [tool("teleport", to="mars"), tool("message", type="result", text="recovered")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace))
    assert outcome.status == TaskState.DONE and outcome.final_text == "recovered"
    result = [m for m in model.requests[1]["messages"] if m["role"] == "tool"][0]
    assert "teleport" in result["content"] and "shell" in result["content"]


async def test_malformed_tool_arguments_become_a_retry_hint(client, task_queue, workspace):
    steps = [Step(tool_calls=[("shell", '{"command": "ls"')]), tool("message", type="result", text="fine")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace))
    assert outcome.status == TaskState.DONE
    result = [m for m in model.requests[1]["messages"] if m["role"] == "tool"][0]
    assert "not valid JSON" in result["content"]
    assert_every_tool_call_answered(model.requests[1])


async def test_only_the_first_tool_call_runs_and_the_rest_are_answered_as_deferred(client, task_queue, workspace):
    steps = [
        Step(tool_calls=[("file", {"action": "write", "path": "a.txt", "content": "A"}),
                         ("file", {"action": "write", "path": "b.txt", "content": "B"})]),
        tool("message", type="result", text="done"),
    ]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace))
    assert outcome.status == TaskState.DONE
    assert (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()
    request = model.requests[1]
    assert_every_tool_call_answered(request)
    results = [m for m in request["messages"] if m["role"] == "tool"]
    assert len(results) == 2 and "deferred" in results[1]["content"]


async def test_repeating_the_same_call_appends_a_loop_reminder(client, task_queue, workspace):
    steps = [tool("file", action="list", path=".") for _ in range(6)] + [tool("message", type="result", text="x")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace))
    assert outcome.status == TaskState.DONE
    reminders = lambda req: [m for m in req["messages"] if m["role"] == "user" and "in a loop" in m["content"]]
    assert reminders(model.requests[5]) == []  # five identical calls are not yet a loop
    assert len(reminders(model.requests[6])) == 1


async def test_rate_limit_with_retry_after_is_retried_after_the_delay(client, task_queue, workspace):
    steps = [error(429, "slow down", headers={"Retry-After": "2"}), tool("message", type="result", text="ok")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE
    gap = model.request_times[1] - model.request_times[0]
    assert gap >= 1.9, f"retried after {gap:.2f}s, Retry-After asked for 2s"


async def test_unauthorized_fails_fast_without_retrying(client, task_queue, workspace):
    steps = [error(401, "invalid api key")]
    async with scripted_worker(client, task_queue, steps) as model:
        started = time.monotonic()
        outcome = await run_task(client, task_queue, make_input(workspace))
        elapsed = time.monotonic() - started
    model.assert_consumed()
    assert model.hits() == 1
    assert outcome.status == TaskState.FAILED
    assert "401" in (outcome.error or "") and "invalid api key" in (outcome.error or "")
    assert elapsed < 10


# A person stopping a task from the Temporal UI types the payload by hand: whatever it is, the
# task stops (before, anything but a string was dropped with a worker log line).
@pytest.mark.parametrize(("payload", "said"), [
    ("changed my mind", "changed my mind"), ({"reason": "from the UI"}, "from the UI"), (5, "(5)"),
    ({}, "stopped by user"),
])
async def test_stop_during_llm_call_ends_the_task_as_stopped(client, task_queue, workspace, payload, said):
    steps = [Step(tool_calls=[("message", {"type": "result", "text": "never"})], hold=True)]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace))
        for _ in range(100):
            if model.hits():
                break
            await asyncio.sleep(0.05)
        status: TaskStatus = await handle.query(AgentTaskWorkflow.status)
        assert status.state == TaskState.THINKING
        await handle.signal("stop", payload)
        outcome = await asyncio.wait_for(outcome_of(handle), 15)
        model.release()
    assert outcome.status == TaskState.FAILED and outcome.stopped
    assert said in (outcome.error or "")
