"""A line typed at the prompt while the last task is closing (its answer shown, its workflow
still recording the session) is never lost: it starts the next task once the last has closed;
`interject` from another terminal is refused in one line rather than taken unread.
The worker here records sessions through a gate the test opens, so the closing lasts as long
as the test needs (in CI it lasted a few milliseconds, and the line typed then was lost)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

import pytest
from temporalio import activity
from temporalio.client import WorkflowExecutionStatus

import worker
from activities.session import SessionActivities
from contracts.activities import RECORD_SESSION_ACTIVITY, SessionRecord
from fakes.scripted import tool
from fakes.step import Step
from tests.cli.test_cli import cli
from tests.cli.test_conversation import PROMPT, expect, run_in_terminal, seen, sleeping, task_id
from tests.workflows.harness import make_input, scripted_worker, start, user_texts, wait_until


@dataclass
class Gate:
    entered: asyncio.Event = field(default_factory=asyncio.Event)  # a task is recording its session
    opened: asyncio.Event = field(default_factory=asyncio.Event)


class GatedSessions(SessionActivities):
    """The worker's session activities, whose record waits for ``gate`` to open."""

    gate = Gate()

    @activity.defn(name=RECORD_SESSION_ACTIVITY)
    async def record_session(self, record: SessionRecord) -> None:
        self.gate.entered.set()
        await self.gate.opened.wait()
        await super().record_session(record)


@pytest.fixture
def recording(monkeypatch) -> Gate:
    """Every session record of the workers this test builds waits for the gate to open."""
    monkeypatch.setattr(GatedSessions, "gate", Gate())
    monkeypatch.setattr(worker, "SessionActivities", GatedSessions)
    return GatedSessions.gate


async def closing(client, workflow_id: str, gate: Gate) -> None:
    await asyncio.wait_for(gate.entered.wait(), 60)
    assert (await client.get_workflow_handle(workflow_id).describe()).status == WorkflowExecutionStatus.RUNNING


async def test_a_follow_up_at_the_prompt_continues_the_conversation_once_the_answered_task_has_closed(
        client, task_queue, workspace, recording):
    steps = [tool("message", type="result", text="The answer is 42."),
             tool("message", type="result", text="Yes: 42, as before.")]
    async with scripted_worker(client, task_queue, steps) as model:
        term = run_in_terminal(client, task_queue, "--workspace", str(workspace), "What is the answer?")
        try:
            await expect(term, "The answer is 42.")
            await expect(term, PROMPT)
            first = task_id(term)
            await closing(client, first, recording)  # answered, and still recording the session
            term.type("Are you sure?")
            await expect(term, "Are you sure?")
            assert f"{PROMPT}Are you sure?" in seen(term).splitlines()  # at the prompt, as typed
            recording.opened.set()
            await expect(term, "Yes: 42, as before.")
            term.press("\x04")
            code = await asyncio.to_thread(term.wait)
        finally:
            term.close()
        model.assert_consumed()
        second_id = re.findall(r"task (task-[a-z0-9-]+) ·", term.screen)[-1]
        status = await client.get_workflow_handle(second_id).query("status")
    assert code == 0, seen(term)
    assert second_id != first and status["session"] == first  # one session, named after the first task
    assert f"left the conversation; come back to it with: python starter.py run --resume {second_id}" in seen(term)
    second = model.requests[1]
    assert user_texts(second)[-1] == "Are you sure?"
    history = "\n".join(str(m["content"]) for m in second["messages"])
    assert "What is the answer?" in history and "The answer is 42." in history  # the session was recorded first
    assert seen(term).count("The answer is 42.") == 1, seen(term)  # the first answer shown once


async def test_a_message_that_reached_a_task_as_it_ended_unread_starts_the_next_task(
        client, task_queue, workspace, recording):
    steps = [tool("shell", command="sleep 30"),
             Step(tool_calls=[("message", {"type": "result", "text": "Stopped where you asked."})], hold=True),
             tool("message", type="result", text="The tests pass.")]
    async with scripted_worker(client, task_queue, steps) as model:
        async with sleeping(client, task_queue, workspace) as (term, workflow_id):
            term.press("\x03")
            await expect(term, "the task goes on")  # the prompt is back while its answer is still held
            await wait_until(lambda: model.hits() == 2)
            model.release()
            await closing(client, workflow_id, recording)  # it ended: no message is read any more
            term.type("And the tests?")
            await expect(term, "the task ended before it read that: it goes to the next task")
            recording.opened.set()
            await expect(term, "The tests pass.")
            term.press("\x04")
            code = await asyncio.to_thread(term.wait)
        model.assert_consumed()
    assert code == 0, seen(term)
    assert user_texts(model.requests[2])[-1] == "And the tests?"
    assert "Stopped where you asked." in "\n".join(str(m["content"]) for m in model.requests[2]["messages"])


async def test_interject_to_a_task_that_is_closing_is_refused_not_taken_unread(client, task_queue, workspace, recording):
    async with scripted_worker(client, task_queue, [tool("message", type="result", text="done")]):
        handle = await start(client, task_queue, make_input(workspace, session="s"))
        await closing(client, handle.id, recording)
        code, out, err = await cli(client, "interject", handle.id, "one more thing", queue=task_queue)
        recording.opened.set()
        await handle.result()
    assert code == 2 and err.strip().endswith(
        f"{handle.id} did not take the message: the task has ended (DONE) and reads no more messages"), err
    assert "Traceback" not in err and "delivered" not in out
