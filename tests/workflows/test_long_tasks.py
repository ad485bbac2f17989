"""Tasks of any length: the context store, continue-as-new, sessions."""

from __future__ import annotations

import asyncio
import signal
import uuid

from contracts.task import Interjection, TaskOutcome, TaskState
from fakes.scripted import ScriptedModelServer, tool
from fakes.step import Step
from runtime.store import ContextStore
from tests import configured
from tests.worker_processes import spawn_worker
from tests.workflows.harness import (
    make_input,
    outcome_of,
    run_task,
    scripted_worker,
    start,
    tool_messages,
    user_texts,
    wait_until,
)
from tests.workflows.test_task_loop import assert_every_tool_call_answered
from workflows.task import AgentTaskWorkflow

FINISH = tool("message", type="result", text="all read")


def reading_script(n: int) -> list[Step]:
    return [tool("file", action="read", path=f"f{i}.txt") for i in range(n)] + [FINISH]


def strip_ids(request: dict) -> list:
    return [(m["role"], m.get("content"), [c["function"]["name"] for c in m.get("tool_calls") or []])
            for m in request["messages"]]


async def test_task_that_continues_as_new_ends_exactly_like_one_that_does_not(client, task_queue, workspace):
    for i in range(7):
        (workspace / f"f{i}.txt").write_text(f"content {i}\n")
    async with scripted_worker(client, task_queue, reading_script(7)) as plain:
        straight = await run_task(client, task_queue, make_input(workspace))
    async with scripted_worker(client, f"{task_queue}-can", reading_script(7)) as split:
        handle = await start(client, f"{task_queue}-can", make_input(workspace, continue_as_new_after=3))
        continued: TaskOutcome = await outcome_of(handle)
    assert continued.runs == 3 and straight.runs == 1
    assert continued.model_dump(exclude={"runs"}) == straight.model_dump(exclude={"runs"})
    assert [strip_ids(r) for r in split.requests] == [strip_ids(r) for r in plain.requests]
    for request in split.requests:
        assert_every_tool_call_answered(request)


async def test_interjection_sent_during_continue_as_new_is_delivered(client, task_queue, workspace):
    for i in range(6):
        (workspace / f"f{i}.txt").write_text("x")
    steps = reading_script(6)[:-1] + [FINISH, FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace, continue_as_new_after=1))
        await wait_until(lambda: model.hits() >= 2)
        for text in ("one", "two", "three"):  # at least one lands while a run hands over to the next
            await handle.signal(AgentTaskWorkflow.interject, Interjection(text=text))
            await asyncio.sleep(0.05)
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE and outcome.runs >= 3
    seen = [t for r in model.requests for t in user_texts(r) if t in ("one", "two", "three")]
    last = [t for t in user_texts(model.requests[-1]) if t in ("one", "two", "three")]
    assert last == ["one", "two", "three"], seen


async def test_worker_killed_between_store_write_and_completion_leaves_no_duplicate(client, task_queue, workspace):
    target = client.service_client.config.target_host
    (workspace / "a.txt").write_text("alpha")
    steps = [tool("file", action="read", path="a.txt"), FINISH]
    with ScriptedModelServer(steps) as model:
        first = spawn_worker(target, task_queue, model.url, module="tests.workflows.faulty_worker")
        handle = await client.start_workflow(
            AgentTaskWorkflow.run, make_input(workspace), id=f"fault-{uuid.uuid4().hex[:8]}", task_queue=task_queue
        )
        await asyncio.get_running_loop().run_in_executor(None, first.wait, 60)
        assert first.returncode == 99  # died right after writing the result entry, before completing
        second = spawn_worker(target, task_queue, model.url)
        try:
            outcome = await asyncio.wait_for(outcome_of(handle), 60)
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(10)
    assert outcome.status == TaskState.DONE
    request = model.requests[1]
    assert_every_tool_call_answered(request)
    results = tool_messages(request)
    assert len(results) == 1 and "alpha" in results[0]["content"]
    store = ContextStore(configured.store_path())
    (context_id,) = store._conn().execute("SELECT DISTINCT context_id FROM entries").fetchone()
    entries = store.load(context_id, 3)
    assert [e.kind for e in entries] == ["user_message", "tool_call", "tool_result"]
    rows = store._conn().execute("SELECT seq FROM entries WHERE context_id = ? ORDER BY seq", (context_id,)).fetchall()
    assert len(rows) == len({r[0] for r in rows})


async def test_a_lost_context_store_is_repaired_by_a_full_resend(client, task_queue, workspace):
    (workspace / "a.txt").write_text("alpha")
    steps = [tool("file", action="read", path="a.txt"), Step(tool_calls=[("file", {"action": "list"})], hold=True), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace))
        await wait_until(lambda: model.hits() == 2)
        store = ContextStore(configured.store_path())
        store._conn().execute("DELETE FROM entries")  # as if the worker moved to a host without the file
        model.release()
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    final = model.requests[-1]
    assert_every_tool_call_answered(final)
    assert user_texts(final)[0] == "do the thing"
    assert "alpha" in tool_messages(final)[0]["content"]


async def test_a_large_output_is_kept_out_of_the_history_but_shown_to_the_model(client, task_queue, workspace):
    big = "".join(f"line {i:05d} of a large file\n" for i in range(600))  # ~17 KB
    (workspace / "big.txt").write_text(big)
    steps = [tool("file", action="read", path="big.txt"), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace))
        await outcome_of(handle)
    history = b"".join(e.SerializeToString() for e in (await handle.fetch_history()).events)
    assert b"line 00599" not in history  # only the preview is in the history
    assert b"line 00000" in history
    assert "line 00599 of a large file" in tool_messages(model.requests[1])[0]["content"]


async def test_a_task_in_a_session_starts_from_the_earlier_tasks_history(client, task_queue, workspace):
    first = [tool("shell", command="echo 42 > answer.txt"), tool("message", type="result", text="wrote the answer")]
    async with scripted_worker(client, task_queue, first):
        await run_task(client, task_queue, make_input(workspace, "write the answer", session="proj"))
    async with scripted_worker(client, task_queue, [tool("message", type="result", text="it is 42")]) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, "what was the answer?", session="proj"))
    assert outcome.final_text == "it is 42"
    texts = user_texts(model.requests[0])
    assert texts[-1] == "what was the answer?"
    history = texts[0]
    assert "<user>write the answer</user>" in history
    assert 'command="echo 42 &gt; answer.txt"' in history or "echo 42" in history
    assert "<result>wrote the answer</result>" in history


async def test_a_long_task_is_compacted_for_the_model_and_the_history_shows_it(client, task_queue, workspace):
    for i in range(12):
        (workspace / f"f{i}.txt").write_text(f"file {i}\n" + "y" * 3000)
    async with scripted_worker(client, task_queue, reading_script(12)) as model:
        handle = await start(client, task_queue, make_input(workspace, context_window=8000))
        outcome = await outcome_of(handle)
        page = await handle.query(AgentTaskWorkflow.events, 0)
    assert outcome.status == TaskState.DONE
    last = model.requests[-1]
    assert_every_tool_call_answered(last)
    users = user_texts(last)
    assert users[0] == "do the thing"  # the original request always stays
    assert any("<compacted_history" in t for t in users)
    assert len(tool_messages(last)) < 12
    notices = [e.text for e in page.entries if e.kind == "status_notice"]
    assert any("context compacted" in n for n in notices)


async def test_a_long_reply_without_a_tool_call_is_recorded_once_not_sent_back(client, task_queue, workspace):
    """The LLM activity stores the reply's entry, as it does a tool call's, so the next call's
    input carries its digest rather than the reply a second time."""
    long = "".join(f"paragraph {i:05d} of a long answer with no tool call. " for i in range(3000))  # ~170 KB
    steps = [Step(text=long), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace))
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    history = b"".join(e.SerializeToString() for e in (await handle.fetch_history()).events)
    assert history.count(b"paragraph 02999 of a long answer") == 1
    # The model still sees what it said.
    assert any("paragraph 02999" in str(m.get("content")) for m in model.requests[1]["messages"])
