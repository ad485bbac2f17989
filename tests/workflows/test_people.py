"""People in the loop: approvals, interjection, ask/reply and stop, on a real dev server."""

from __future__ import annotations

import asyncio
import subprocess
import time

import pytest
from temporalio.client import WorkflowUpdateFailedError

from contracts.activities import TOOL_ACTIVITY
from contracts.task import ApprovalDecision, ApprovalMode, Interjection, TaskState, TaskStatus
from fakes.scripted import tool
from fakes.step import Step
from tests.workflows.harness import (
    activities_scheduled,
    make_input,
    outcome_of,
    scripted_worker,
    signals_handled,
    start,
    tool_messages,
    user_texts,
    wait_for_state,
    wait_until,
)
from tests.workflows.test_task_loop import assert_every_tool_call_answered
from workflows.search_attributes import AGENT_STATE
from workflows.task import AgentTaskWorkflow

FINISH = tool("message", type="result", text="finished")


def approve(status: TaskStatus | None, reason: str = "looks fine", **kw) -> ApprovalDecision:
    """An approval of the call ``status`` shows pending, named by its digest as a client does."""
    digest = status.pending_approval.digest if status and status.pending_approval else None
    return ApprovalDecision(approved=True, reason=reason, decided_by="tester", digest=digest, **kw)


def deny(status: TaskStatus, reason: str) -> ApprovalDecision:
    return approve(status, reason).model_copy(update={"approved": False})


async def test_dangerous_call_waits_for_approval_then_runs(client, task_queue, workspace):
    (workspace / "build").mkdir()
    async with scripted_worker(client, task_queue, [tool("shell", command="rm -rf build"), FINISH]) as model:
        handle = await start(client, task_queue, make_input(workspace))
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        assert status.pending_approval.tool == "shell"
        assert status.pending_approval.danger == "dangerous"
        assert "rm" in status.pending_approval.reason
        assert await activities_scheduled(handle, TOOL_ACTIVITY) == 0, "scheduled before it was approved"
        assert (workspace / "build").exists(), "ran before it was approved"
        pending = await handle.execute_update(AgentTaskWorkflow.decide, approve(status))
        assert pending.arguments == {"command": "rm -rf build"}
        outcome = await outcome_of(handle)
        page = await handle.query(AgentTaskWorkflow.events, 0)
    assert outcome.status == TaskState.DONE
    assert not (workspace / "build").exists()
    notices = [e.text for e in page.entries if e.kind == "status_notice"]
    assert any("approved by tester" in n and "looks fine" in n for n in notices)
    model.assert_consumed()


async def test_denied_call_reaches_the_model_with_the_reason(client, task_queue, workspace):
    (workspace / "build").mkdir()
    async with scripted_worker(client, task_queue, [tool("shell", command="rm -rf build"), FINISH]) as model:
        handle = await start(client, task_queue, make_input(workspace))
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        await handle.execute_update(AgentTaskWorkflow.decide, deny(status, "keep the build"))
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    assert (workspace / "build").exists()
    result = tool_messages(model.requests[1])[0]["content"]
    assert "[denied]" in result and "keep the build" in result and "tester" in result


async def test_never_mode_runs_a_dangerous_call_without_waiting(client, task_queue, workspace):
    (workspace / "build").mkdir()
    async with scripted_worker(client, task_queue, [tool("shell", command="rm -rf build"), FINISH]):
        handle = await start(client, task_queue, make_input(workspace, approval=ApprovalMode.NEVER))
        outcome = await asyncio.wait_for(outcome_of(handle), 15)
    assert outcome.status == TaskState.DONE and not (workspace / "build").exists()


async def test_always_mode_waits_even_for_a_safe_call(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, [tool("file", action="list", path="."), FINISH]):
        handle = await start(client, task_queue, make_input(workspace, approval=ApprovalMode.ALWAYS))
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        assert status.pending_approval.tool == "file" and status.pending_approval.danger == "safe"
        await handle.signal(AgentTaskWorkflow.approve, approve(status))  # the signal path works too
        while status.pending_approval.tool != "message":  # the message call waits as well
            status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        await handle.execute_update(AgentTaskWorkflow.decide, approve(status))
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE


async def test_update_naming_a_call_that_is_not_pending_is_rejected_and_changes_nothing(client, task_queue, workspace):
    steps = [Step(tool_calls=[("shell", {"command": "sudo true"})], hold=True), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace))
        await wait_until(lambda: model.hits() == 1)  # thinking: nothing is pending
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update(AgentTaskWorkflow.decide, approve(None))
        assert "no tool call is waiting" in str(err.value.cause)
        model.release()
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update(AgentTaskWorkflow.decide, approve(status, call_id="call_that_does_not_exist"))
        assert "not pending" in str(err.value.cause)
        after = await handle.query(AgentTaskWorkflow.status)
        assert after.state == TaskState.WAITING_APPROVAL
        assert after.pending_approval == status.pending_approval
        await handle.execute_update(AgentTaskWorkflow.decide, deny(status, "no sudo"))
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    assert "no sudo" in tool_messages(model.requests[1])[0]["content"]


async def test_a_decision_without_the_calls_digest_is_refused_by_update_and_ignored_by_signal(
    client, task_queue, workspace
):
    (workspace / "build").mkdir()
    async with scripted_worker(client, task_queue, [tool("shell", command="rm -rf build"), FINISH]):
        handle = await start(client, task_queue, make_input(workspace))
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        blind = ApprovalDecision(approved=True, call_id=status.pending_approval.call_id, decided_by="tester")
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update(AgentTaskWorkflow.decide, blind)
        assert "names no call digest" in str(err.value.cause)
        await handle.signal(AgentTaskWorkflow.approve, blind)
        await signals_handled(handle)
        assert (await handle.query(AgentTaskWorkflow.status)).pending_approval == status.pending_approval
        assert (workspace / "build").exists(), "ran on a decision without a digest"
        await handle.execute_update(AgentTaskWorkflow.decide, approve(status))
        assert (await outcome_of(handle)).status == TaskState.DONE
    assert not (workspace / "build").exists()


async def test_pending_call_is_denied_when_the_approval_timeout_expires(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, [tool("shell", command="git push"), FINISH]) as model:
        outcome = await outcome_of(await start(client, task_queue, make_input(workspace, approval_timeout_s=1)))
    assert outcome.status == TaskState.DONE
    result = tool_messages(model.requests[1])[0]["content"]
    assert "[denied]" in result and "timeout" in result


async def test_approval_after_the_worker_was_restarted_while_waiting(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, [tool("shell", command="sudo echo hi"), FINISH]) as model:
        handle = await start(client, task_queue, make_input(workspace))
        await wait_for_state(handle, TaskState.WAITING_APPROVAL)
    # no worker now; the decision is accepted durably once a worker is back
    async with scripted_worker(client, task_queue, [FINISH]) as model:
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        await handle.execute_update(AgentTaskWorkflow.decide, deny(status, "not as root"))
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    assert "not as root" in tool_messages(model.requests[0])[0]["content"]


async def test_interjection_during_a_long_shell_call_ends_it_within_seconds(client, task_queue, workspace):
    steps = [tool("shell", command="echo $$ > pid && sleep 60"), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace))
        await wait_for_state(handle, TaskState.EXECUTING_TOOL)
        await wait_until(lambda: (workspace / "pid").exists() and (workspace / "pid").read_text().strip())
        sent = time.monotonic()
        await handle.signal(AgentTaskWorkflow.interject, Interjection(text="never mind, just finish"))
        await wait_until(lambda: model.hits() == 2, 15)
        elapsed = model.request_times[1] - sent
        outcome = await outcome_of(handle)
    assert elapsed < 5, f"the interjection took {elapsed:.1f}s to reach the model"
    assert outcome.status == TaskState.DONE
    request = model.requests[1]
    assert_every_tool_call_answered(request)
    assert "[interrupted]" in tool_messages(request)[0]["content"]
    assert user_texts(request)[-1] == "never mind, just finish"
    pid = (workspace / "pid").read_text().strip()
    await wait_until(lambda: subprocess.run(["pgrep", "-s", pid], capture_output=True).returncode != 0, 5)


async def test_interjection_during_a_slow_llm_call_cancels_it(client, task_queue, workspace):
    steps = [Step(tool_calls=[("shell", {"command": "echo never > never.txt"})], hold=True), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace))
        await wait_until(lambda: model.hits() == 1)
        await handle.signal(AgentTaskWorkflow.interject, Interjection(text="change of plan"))
        await wait_until(lambda: model.hits() == 2, 10)
        model.release()
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    assert not (workspace / "never.txt").exists()
    assert user_texts(model.requests[1])[-1] == "change of plan"
    assert_every_tool_call_answered(model.requests[1])


async def test_two_quick_interjections_both_reach_the_model_in_order(client, task_queue, workspace):
    # The second message may land before or after the first has restarted the LLM call;
    # either way the model must end up with both, once each, in order. The restarted call is
    # held until both are handled, so the task cannot finish before the second arrives (a
    # message that reaches an ended task goes to the next one: tests/cli/test_conversation_closing.py).
    held = Step(tool_calls=[("message", {"type": "result", "text": "too early"})], hold=True)
    held_finish = Step(tool_calls=FINISH.tool_calls, hold=True)
    async with scripted_worker(client, task_queue, [held, held_finish, FINISH]) as model:
        handle = await start(client, task_queue, make_input(workspace))
        await wait_until(lambda: model.hits() == 1)
        await handle.signal(AgentTaskWorkflow.interject, Interjection(text="first"))
        await handle.signal(AgentTaskWorkflow.interject, Interjection(text="second"))
        await signals_handled(handle)
        await wait_until(lambda: model.hits() >= 2)
        model.release()
        outcome = await outcome_of(handle)
    assert outcome.final_text == "finished"
    # Each call showed the messages handled by then, once each and in order, and a call made after
    # both showed both. Not "the last request": a call cancelled for the second message may still
    # reach the model after the call that replaced it (its activity had started), and be answered.
    seen = [[t for t in user_texts(request) if t in ("first", "second")] for request in model.requests]
    assert seen[0] == [] and all(s in (["first"], ["first", "second"]) for s in seen[1:])
    assert seen.count(["first", "second"]) == 1 and model.hits() in (2, 3)


async def test_interjection_while_waiting_for_approval_denies_the_call_as_superseded(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, [tool("shell", command="sudo reboot"), FINISH]) as model:
        handle = await start(client, task_queue, make_input(workspace))
        await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        await handle.signal(AgentTaskWorkflow.interject, Interjection(text="do not reboot"))
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    request = model.requests[1]
    assert "superseded" in tool_messages(request)[0]["content"]
    assert user_texts(request)[-1] == "do not reboot"
    assert_every_tool_call_answered(request)


async def test_ask_then_reply_then_completion(client, task_queue, workspace):
    steps = [tool("message", type="ask", text="Which file?"), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace))
        status = await wait_for_state(handle, TaskState.WAITING_REPLY)
        assert status.question == "Which file?"
        assert model.hits() == 1
        await handle.signal(AgentTaskWorkflow.interject, Interjection(text="notes.md"))
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    assert user_texts(model.requests[1])[-1] == "notes.md"


async def test_stop_during_a_tool_call_kills_it_and_fails_the_task_as_stopped(client, task_queue, workspace):
    steps = [tool("shell", command="echo $$ > pid && sleep 60")]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace))
        await wait_until(lambda: (workspace / "pid").exists() and (workspace / "pid").read_text().strip())
        await handle.signal(AgentTaskWorkflow.stop, "enough")
        outcome = await asyncio.wait_for(outcome_of(handle), 10)
        pid = (workspace / "pid").read_text().strip()
        await wait_until(lambda: subprocess.run(["pgrep", "-s", pid], capture_output=True).returncode != 0, 5)
    assert outcome.status == TaskState.FAILED and outcome.stopped
    assert outcome.error == "stopped: enough"


async def test_a_task_waiting_for_approval_is_found_by_its_search_attribute(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, [tool("shell", command="sudo ls"), FINISH]):
        handle = await start(client, task_queue, make_input(workspace, search_attributes=True))
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        query = f"WorkflowId = '{handle.id}' AND AgentState = 'WAITING_APPROVAL'"
        found: list[str] = []
        for _ in range(100):
            found = [wf.id async for wf in client.list_workflows(query)]
            if found:
                break
            await asyncio.sleep(0.1)
        assert found == [handle.id]
        await handle.execute_update(AgentTaskWorkflow.decide, approve(status))
        await outcome_of(handle)
        desc = await handle.describe()
    assert desc.typed_search_attributes.get(AGENT_STATE) == "DONE"
