"""A conversation you stay in: `run` at a real (pseudo) terminal, driven as a person would,
against a scripted model served by this process and a worker of this process."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio.client import Client, WorkflowExecutionStatus

from cli.slash import is_command
from contracts.activities import TOOL_ACTIVITY
from contracts.task import TaskOutcome, TaskState
from fakes.scripted import tool
from fakes.step import Step
from tests.cli.test_cli import cli
from tests.cli.test_cli_terminal import ROOT, Terminal
from tests.cli.vt import Screen
from tests.workflows.harness import outcome_of, scripted_worker, tool_messages, user_texts, wait_until

COLUMNS = 200
PROMPT = "› "


def run_in_terminal(client: Client, queue: str, *args: str) -> Terminal:
    env = dict(os.environ, TEMPORAL_ADDRESS=client.service_client.config.target_host, TEMPORAL_NAMESPACE="default",
               AGENT_TASK_QUEUE=queue, AGENT_MODEL="scripted-model", TERM="xterm", COLUMNS=str(COLUMNS))
    return Terminal([sys.executable, str(ROOT / "starter.py"), "run", *args], env)


def task_id(term: Terminal) -> str:
    found = re.search(r"task (task-[a-z0-9-]+) ·", term.screen)
    assert found, term.screen
    return found.group(1)


def seen(term: Terminal) -> str:
    return Screen(COLUMNS).feed(term.screen).text()


@asynccontextmanager
async def sleeping(client: Client, queue: str, workspace) -> AsyncIterator[tuple[Terminal, str]]:
    """`run` at a terminal whose task is running its first call (``sleep 30``, scripted):
    the terminal and the task's id; the terminal is closed after."""
    term = run_in_terminal(client, queue, "--workspace", str(workspace), "--approval", "never", "Wait a while")
    try:
        await expect(term, "/workflows/task-")  # the line naming the task
        workflow_id = task_id(term)
        await tool_running(client, workflow_id)
        yield term, workflow_id
    finally:
        term.close()


async def expect(term: Terminal, text: str, times: int = 1) -> None:
    await asyncio.to_thread(term.expect, text, 60, times)


async def prompts(term: Terminal, count: int) -> None:
    """Until the screen, as the terminal shows it, has held ``count`` prompts and the last
    waits for a line (what is typed is drawn after a prompt, so raw "› " counts more)."""
    def waiting(raw: str) -> bool:
        rows = [row for row in Screen(COLUMNS).feed(raw).text().splitlines() if row.strip()]
        return bool(rows) and rows[-1] == PROMPT.strip() and sum(row.startswith(PROMPT.strip()) for row in rows) >= count

    await asyncio.to_thread(term.until, waiting)


async def tool_running(client: Client, workflow_id: str) -> None:
    """Until the task's tool activity has started on the worker."""
    async def started() -> bool:
        desc = await client.get_workflow_handle(workflow_id).describe()
        return any(p.activity_type.name == TOOL_ACTIVITY and p.HasField("last_started_time")
                   for p in desc.raw_description.pending_activities)

    for _ in range(600):
        if await started():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the tool never started")


async def test_ctrl_c_once_stops_the_running_step_and_the_prompt_returns(client, task_queue, workspace):
    steps = [tool("shell", command="sleep 30"), tool("message", type="result", text="Stopped where you asked.")]
    async with scripted_worker(client, task_queue, steps) as model:
        async with sleeping(client, task_queue, workspace) as (term, workflow_id):
            term.press("\x03")
            await expect(term, "interrupted: the current step is cut off")
            await expect(term, PROMPT)  # the first prompt: the task ended, or goes on without the step
            outcome = await asyncio.wait_for(outcome_of(client.get_workflow_handle(workflow_id, result_type=TaskOutcome)), 60)
            term.type("/nope")
            await expect(term, "unknown command /nope; the commands are /cost, /diff, /rewind, /stop, /approval, /help")
            term.type("/cost")
            await expect(term, f"conversation {workflow_id}: 1 task(s)")
            assert term.proc.poll() is None  # still in the conversation
            term.press("\x04")
            code = await asyncio.to_thread(term.wait)
        model.assert_consumed()
    assert code == 0, seen(term)
    assert outcome.status == TaskState.DONE and outcome.final_text == "Stopped where you asked."
    after = model.requests[1]
    # The sleep was cut off, and the model told why.
    assert tool_messages(after)[-1]["content"].startswith("[interrupted]")
    assert "pressed Ctrl-C" in user_texts(after)[-1]


async def test_ctrl_c_twice_leaves_and_says_how_to_come_back(client, task_queue, workspace):
    steps = [tool("shell", command="sleep 30"),
             Step(tool_calls=[("message", {"type": "result", "text": "ok"})], hold=True)]
    async with scripted_worker(client, task_queue, steps) as model:
        async with sleeping(client, task_queue, workspace) as (term, workflow_id):
            term.press("\x03")
            await expect(term, "interrupted:")
            term.press("\x03")
            code = await asyncio.to_thread(term.wait)
            desc = await client.get_workflow_handle(workflow_id).describe()
            await wait_until(lambda: model.hits() == 2)
            model.release()
            outcome = await asyncio.wait_for(outcome_of(client.get_workflow_handle(workflow_id, result_type=TaskOutcome)), 60)
    screen = seen(term)
    assert code == 130, screen
    assert (f"task {workflow_id} goes on; follow it with: python starter.py watch {workflow_id} · "
            f"back to the conversation: python starter.py run --resume {workflow_id}") in screen
    assert desc.status == WorkflowExecutionStatus.RUNNING  # left, not stopped
    assert outcome.status == TaskState.DONE


async def test_resume_and_continue_pick_up_a_finished_tasks_conversation_without_a_terminal(client, task_queue, workspace):
    steps = [tool("message", type="result", text="Noted: the colour is teal."),
             tool("message", type="result", text="It was teal."),
             tool("message", type="result", text="Still teal.")]
    async with scripted_worker(client, task_queue, steps) as model:
        code, out, err = await cli(client, "run", "--detach", "--workspace", str(workspace),
                                   "Remember: the colour is teal", queue=task_queue)
        assert code == 0, err
        first = out.strip().splitlines()[-1]
        await outcome_of(client.get_workflow_handle(first, result_type=TaskOutcome))
        code, out, err = await cli(client, "run", "--resume", first, "--workspace", str(workspace),
                                   "Which colour was it?", queue=task_queue)
        assert code == 0, err
        assert "It was teal." in out
        # The conversation so far comes first: what was asked and what was answered.
        replayed = out.split("It was teal.")[0]
        assert "earlier in this conversation (the last 1)" in replayed
        assert "Remember: the colour is teal" in replayed and "Noted: the colour is teal." in replayed
        code, out, err = await cli(client, "run", "--continue", "Sure?", queue=task_queue, cwd=workspace)
        assert code == 0, err
        assert "earlier in this conversation (the last 2)" in out and out.index("Noted") < out.index("It was teal.")
        model.assert_consumed()
    history = "\n".join(str(m["content"]) for m in model.requests[1]["messages"])
    assert "Noted: the colour is teal." in history
    later = "\n".join(str(m["content"]) for m in model.requests[2]["messages"])  # the newest task here: its session
    assert "Noted: the colour is teal." in later and "It was teal." in later and "Still teal." in out


async def test_the_demo_takes_a_follow_up_at_the_prompt(client, workspace):
    term = run_in_terminal(client, "unused", "--demo", "--workspace", str(workspace), "Note the first thing")
    try:
        await expect(term, PROMPT)
        term.type("Note the second thing")
        await prompts(term, 2)
        term.press("\x04")
        code = await asyncio.to_thread(term.wait)
    finally:
        term.close()
    assert code == 0 and len(re.findall(r"task (task-note-the-[a-z0-9-]+) ·", term.screen)) == 2, seen(term)
    assert "Note the second thing" in (workspace / "AGENT_DEMO.md").read_text()


async def test_slash_commands_show_the_diff_and_set_the_approval_of_the_next_task(client, task_queue, workspace):
    steps = [tool("file", action="write", path="notes.md", content="hello\n"),
             tool("message", type="result", text="written"),
             tool("message", type="result", text="ok")]
    async with scripted_worker(client, task_queue, steps) as model:
        term = run_in_terminal(client, task_queue, "--workspace", str(workspace), "--approval", "never", "--verify", "off",
                               "Write notes")
        try:
            await expect(term, PROMPT)
            term.type("/diff")
            await expect(term, "+hello")
            term.type("/approval sometimes")
            await expect(term, "approval modes: dangerous, always, never")
            term.type("/approval dangerous")
            await expect(term, "approval for the next tasks: dangerous")
            term.type("/help")
            await expect(term, "/rewind N")
            term.type("Thanks")
            await prompts(term, 6)
            second = re.findall(r"task (task-[a-z0-9-]+) ·", term.screen)[-1]
            status = await client.get_workflow_handle(second).query("status")
            term.press("\x04")
            assert await asyncio.to_thread(term.wait) == 0
        finally:
            term.close()
        model.assert_consumed()
    screen = seen(term)
    assert "+++ b/notes.md" in screen, screen
    assert status["approval"] == "dangerous"  # the first task's was never


async def test_rewind_at_the_prompt_takes_the_last_task_back_and_follows_it_again(client, task_queue, workspace):
    steps = [tool("file", action="write", path="a.txt", content="a"),
             tool("file", action="write", path="b.txt", content="b"),
             tool("message", type="result", text="both written"),
             tool("message", type="result", text="only a now")]  # turn 2 again, after the rewind
    async with scripted_worker(client, task_queue, steps) as model:
        term = run_in_terminal(client, task_queue, "--workspace", str(workspace), "--approval", "never", "--verify", "off",
                               "Write files")
        try:
            await expect(term, PROMPT)
            assert (workspace / "b.txt").exists()
            term.type("/rewind 9")  # a mistake is one line, and the prompt stays
            await expect(term, "never started turn 10")
            term.type("/rewind 1")
            await expect(term, "only a now")
            await prompts(term, 3)
            term.press("\x04")
            assert await asyncio.to_thread(term.wait) == 0
        finally:
            term.close()
        model.assert_consumed()
    screen = seen(term)
    assert "workspace restored to the end of turn 1" in screen and "rewound to the end of turn 1" in screen
    assert (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()
    assert screen.count("both written") == 1  # what was shown before the rewind is not shown again


async def test_after_a_ctrl_c_what_is_typed_goes_to_the_task_that_goes_on(client, task_queue, workspace):
    steps = [tool("shell", command="sleep 30"),
             Step(tool_calls=[("message", {"type": "result", "text": "never sent"})], hold=True),
             tool("message", type="result", text="Carrying on with the plan.")]
    async with scripted_worker(client, task_queue, steps) as model:
        term = run_in_terminal(client, task_queue, "--workspace", str(workspace), "--approval", "never", "Wait a while")
        try:
            await expect(term, "/workflows/task-")  # the line naming the task
            workflow_id = task_id(term)
            await tool_running(client, workflow_id)
            term.press("\x03")
            await expect(term, "the task goes on: type to tell it more")  # its model call is held: it cannot end
            term.type("Carry on with the plan")
            await expect(term, "Carrying on with the plan.")
            await prompts(term, 2)
            term.press("\x04")
            assert await asyncio.to_thread(term.wait) == 0
        finally:
            term.close()
        model.assert_consumed()
    assert re.findall(r"task (task-[a-z0-9-]+) ·", term.screen) == [workflow_id]  # no second task
    last = user_texts(model.requests[2])
    assert "pressed Ctrl-C" in last[-2] and last[-1] == "Carry on with the plan"


def test_a_slash_word_is_a_command_and_a_path_is_a_message():
    assert is_command("/cost") and is_command("/rewind 3") and is_command("/nope")
    assert not is_command("/etc/hosts is wrong") and not is_command("fix /tmp") and not is_command("/")
