"""Verification before finishing (workflows/verify.py), end to end: real dev server, real
worker, the model a scripted HTTP server."""

from __future__ import annotations

from contracts.task import TaskState
from core.entries import SystemReminder
from fakes.scripted import tool
from tests.workflows.harness import make_input, outcome_of, run_task, scripted_worker, start, user_texts
from workflows.task import AgentTaskWorkflow

INSTRUCTION = "make test_app.py pass"
EDIT = tool("file", action="write", path="app.py", content="def answer():\n    return 42\n")
RESULT = tool("message", type="result", text="fixed")


def verify_reminders(request: dict) -> list[str]:
    return [t for t in user_texts(request) if "check that it is done" in t]


async def test_a_task_that_edits_and_finishes_without_running_anything_is_reminded_once(client, task_queue, workspace):
    steps = [EDIT, RESULT, tool("shell", command="python -c 'import app; assert app.answer() == 42'"), RESULT]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace, INSTRUCTION, verify="auto"))
        outcome = await outcome_of(handle)
        page = await handle.query(AgentTaskWorkflow.events)  # a query needs the worker
    model.assert_consumed()
    assert outcome.status == TaskState.DONE and outcome.final_text == "fixed"
    assert outcome.turns == 4  # the reminder's turns count like any other
    assert verify_reminders(model.requests[1]) == []
    [reminder] = verify_reminders(model.requests[2])
    assert INSTRUCTION in reminder and "file · write app.py" in reminder and "return 42" not in reminder
    assert len(verify_reminders(model.requests[3])) == 1  # the one reminder, never a second
    entries = [e for e in page.entries if isinstance(e, SystemReminder)]
    assert [e.reason for e in entries] == ["verify"]  # its own entry in the history and in `watch`


async def test_the_result_after_the_reminder_finishes_even_without_a_check(client, task_queue, workspace):
    steps = [EDIT, RESULT, RESULT]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, INSTRUCTION, verify="auto"))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE and outcome.turns == 3


async def test_a_read_only_task_finishes_at_once(client, task_queue, workspace):
    (workspace / "app.py").write_text("x = 1\n")
    steps = [tool("file", action="read", path="app.py"), tool("message", type="info", text="reading"), RESULT]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, INSTRUCTION, verify="auto"))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE and outcome.turns == 3


async def test_a_read_only_command_after_a_change_is_the_check(client, task_queue, workspace):
    """``cat`` after an edit checks it (the gate reads it as read-only): no reminder."""
    steps = [EDIT, tool("shell", command="cat app.py"), RESULT]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, INSTRUCTION, verify="auto"))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE and outcome.turns == 3
    assert "return 42" in model.requests[2]["messages"][-1]["content"]  # the check ran and was read


async def test_read_only_commands_are_not_changes(client, task_queue, workspace):
    (workspace / "hello.txt").write_text("hi\n")
    steps = [tool("shell", command="cat hello.txt"), tool("shell", command="git status || ls"), RESULT]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, INSTRUCTION, verify="auto"))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE and outcome.turns == 3


async def test_a_command_that_may_write_after_the_check_is_a_change_again(client, task_queue, workspace):
    steps = [EDIT, tool("shell", command="cat app.py"), tool("shell", command="touch done.txt"), RESULT, RESULT]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, INSTRUCTION, verify="auto"))
    model.assert_consumed()
    [reminder] = verify_reminders(model.requests[4])
    assert "changed: shell · touch done.txt." in reminder  # the edit before the check is not named
    assert outcome.status == TaskState.DONE and outcome.turns == 5


async def test_verify_off_finishes_at_once(client, task_queue, workspace):
    steps = [EDIT, RESULT]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, INSTRUCTION, verify="off"))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE and outcome.turns == 2


async def test_no_reminder_when_the_turn_limit_leaves_no_room_to_check(client, task_queue, workspace):
    steps = [EDIT, RESULT]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, INSTRUCTION, verify="auto", max_iterations=3))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE and outcome.turns == 2
