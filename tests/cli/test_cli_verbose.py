"""`watch` for people: what was written for the model alone (the engine's reminders, the
message a Ctrl-C sends) is left out unless ``--verbose``; times are to the second; a call
waiting for approval is one line, not two."""

from __future__ import annotations

import re
from io import StringIO

from rich.console import Console

from cli.render import INTERRUPTED, render_entry
from contracts.task import ApprovalDecision, TaskState
from core.entries import StatusNotice, SystemReminder, UserMessage
from fakes.scripted import tool
from fakes.step import Step
from tests.cli.test_cli import cli
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start, wait_for_state
from workflows.task import AgentTaskWorkflow

FRACTION = re.compile(r"\d\d:\d\d:\d\d\.\d")


async def test_watch_hides_reminders_unless_verbose_and_says_times_to_the_second(client, task_queue, workspace):
    steps = [Step(text="Thinking out loud, no tool."),  # the engine reminds the model to call one
             tool("shell", command="git push origin feature"),
             tool("message", type="result", text="pushed")]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace))
        pending = (await wait_for_state(handle, TaskState.WAITING_APPROVAL)).pending_approval
        assert pending is not None
        await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(
            approved=True, digest=pending.digest, decided_by="ops"))
        await outcome_of(handle)
        code, plain, err = await cli(client, "watch", handle.id, queue=task_queue)
        assert code == 0, err
        code, verbose, err = await cli(client, "watch", handle.id, "--verbose", queue=task_queue)
        assert code == 0, err
    assert "shell call approved by ops at " in plain and not FRACTION.search(plain), plain
    assert "! reminder" not in plain and "Thinking out loud, no tool." in plain
    assert "! reminder" in verbose
    assert plain.count("git push origin feature") == 1


def test_the_message_a_ctrl_c_sends_is_for_the_model_and_a_notice_is_read_to_the_second():
    def shown(entry, verbose: bool = False) -> str:
        out = StringIO()
        render_entry(Console(file=out, width=200, color_system=None), entry, verbose=verbose)
        return out.getvalue()

    assert shown(UserMessage(text=INTERRUPTED)) == "" and "pressed Ctrl-C" in shown(UserMessage(text=INTERRUPTED), True)
    assert shown(SystemReminder(text="call a tool")) == "" and "! reminder call a tool" in shown(SystemReminder(text="call a tool"), True)
    notice = StatusNotice(text="shell call approved by ops at 2026-11-28T09:05:22.123456+00:00")
    assert shown(notice).strip() == "· shell call approved by ops at 2026-11-28T09:05:22+00:00"
