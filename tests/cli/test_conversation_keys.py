"""The conversation's keys at a real (pseudo) terminal: one prompt at a time, and what is
typed while a task runs is queued, shown as queued and sent when the turn ends."""

from __future__ import annotations

import asyncio
import re

from cli.screen import CUT
from cli.tasks import who
from contracts.task import TaskOutcome, TaskState
from fakes.scripted import tool
from fakes.step import Step
from tests.cli.test_conversation import PROMPT, expect, prompts, run_in_terminal, seen, sleeping, task_id
from tests.workflows.harness import outcome_of, scripted_worker, user_texts, wait_until


def held(text: str) -> Step:
    """A model call that answers ``text`` as the task's result once released."""
    return Step(tool_calls=[("message", {"type": "result", "text": text})], hold=True)


async def test_what_is_typed_while_a_task_runs_is_queued_and_sent_when_the_turn_ends(client, task_queue, workspace):
    steps = [held("First done."), tool("message", type="result", text="Checked the tests too.")]
    async with scripted_worker(client, task_queue, steps) as model:
        term = run_in_terminal(client, task_queue, "--workspace", str(workspace), "First thing")
        try:
            await expect(term, "/workflows/task-")
            await wait_until(lambda: model.hits() == 1)
            term.press("Also che")
            await expect(term, "Also che")  # the line being typed, drawn under the status line
            term.type("ck the tests")
            await expect(term, "queued: Also check the tests")
            model.release()
            await expect(term, "Checked the tests too.")
            term.press("\x04")
            code = await asyncio.to_thread(term.wait)
        finally:
            term.close()
        model.assert_consumed()
    screen = seen(term)
    assert code == 0, screen
    rows = [row.strip() for row in screen.splitlines() if "Also che" in row]
    assert rows == ["queued: Also check the tests", f"{PROMPT}Also check the tests", "user  Also check the tests"], screen
    assert screen.index("First done.") < screen.index(f"{PROMPT}Also check the tests")  # sent when the turn ended
    assert user_texts(model.requests[1])[-1] == "Also check the tests"
    assert len(set(re.findall(r"task (task-[a-z0-9-]+) ·", screen))) == 2  # the next task of the conversation


async def test_streamed_text_cut_by_ctrl_c_stays_on_the_screen_with_a_mark(client, task_queue, workspace):
    said = "I will read every file in turn and then write a careful summary of what each one does for you"
    steps = [Step(text=said, text_pieces=40, frame_delay_s=0.3, tool_calls=[("message", {"type": "result", "text": "x"})]),
             tool("message", type="result", text="Stopped, as asked.")]
    async with scripted_worker(client, task_queue, steps):
        term = run_in_terminal(client, task_queue, "--workspace", str(workspace), "Summarise the files")
        try:
            await expect(term, "I will read")  # streaming, in the live region
            term.press("\x03")
            await expect(term, CUT)
            await expect(term, PROMPT)  # the task took the interruption: it ended, or goes on
            term.type("")  # Enter: the rest of it, to its end
            await expect(term, "Stopped, as asked.")
            term.press("\x04")
            code = await asyncio.to_thread(term.wait)
        finally:
            term.close()
    screen = seen(term)
    assert code == 0, screen
    (kept,) = [row for row in screen.splitlines() if row.startswith("model I will read")]
    assert kept.endswith(CUT) and said not in kept  # as far as it came, marked
    assert screen.index(kept) < screen.index("Stopped, as asked.")


async def test_a_task_that_ends_after_ctrl_c_shows_its_result_on_the_next_enter(client, task_queue, workspace):
    steps = [tool("shell", command="sleep 30"), held("Stopped where you asked.")]
    async with scripted_worker(client, task_queue, steps) as model:
        async with sleeping(client, task_queue, workspace) as (term, workflow_id):
            term.press("\x03")
            await expect(term, "the task goes on: type to tell it more")
            await wait_until(lambda: model.hits() == 2)
            model.release()
            outcome = await outcome_of(client.get_workflow_handle(workflow_id, result_type=TaskOutcome))
            term.type("")  # Enter
            await expect(term, "Stopped where you asked.")
            await prompts(term, 2)
            term.press("\x04")
            code = await asyncio.to_thread(term.wait)
    assert outcome.status == TaskState.DONE and code == 0, seen(term)
    assert "DONE (2 turns" in seen(term)


async def test_ctrl_d_while_a_task_runs_leaves_at_once_and_the_task_goes_on(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, [held("Done thinking.")]) as model:
        term = run_in_terminal(client, task_queue, "--workspace", str(workspace), "Think hard")
        try:
            await expect(term, "/workflows/task-")
            workflow_id = task_id(term)
            await wait_until(lambda: model.hits() == 1)
            term.press("\x04")
            code = await asyncio.to_thread(term.wait, 15)  # a bound, not a timing: it waited for the task
        finally:
            term.close()
            model.release()
        outcome = await outcome_of(client.get_workflow_handle(workflow_id, result_type=TaskOutcome))
    assert code == 130 and f"task {workflow_id} goes on" in seen(term), seen(term)
    assert outcome.status == TaskState.DONE


async def test_ctrl_c_at_an_approval_prompt_leaves_no_dead_prompt_and_a_later_a_denies_nothing(
    client, task_queue, workspace
):
    # After the call is declined the task may take one model call or two (the decline and the
    # interruption arrive apart or together), and "a" may reach it or the next task: any will do.
    steps = [tool("shell", command="git push origin feature"), *[tool("message", type="result", text="Noted.")] * 3]
    async with scripted_worker(client, task_queue, steps) as model:
        term = run_in_terminal(client, task_queue, "--workspace", str(workspace), "--approval", "dangerous", "Push it")
        try:
            await expect(term, "approve? [y/N/a]")
            term.press("\x03")
            await expect(term, "interrupted: the current step is cut off")
            term.type("a")  # meant for the prompt that was there
            await wait_until(lambda: any(user_texts(r)[-1:] == ["a"] for r in model.requests), 60)
            await expect(term, "Noted.")
        finally:
            term.close()
    screen = seen(term)
    assert "approve? [" not in screen and "reason (optional)" not in screen, screen  # the prompt went
    assert f"shell call denied by {who()} at " in screen and "Ctrl-C at the prompt" in screen
    assert "queued: a" in screen and "approved by" not in screen  # a message after the turn, not the answer
