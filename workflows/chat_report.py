"""What a task started from a chat tells its conversation (``TaskInput.conversation``): the tool
it runs (progress), the call it waits on (approval), its question and its end, each as a
``task_report`` signal to the conversation workflow, which turns them into chat messages.

Called from the loop at two points (``_set_state`` and ``_finish``); a task without a
conversation (every task before this existed) takes no branch here, so their histories replay
unchanged. Deterministic: signals are workflow commands.
"""

from __future__ import annotations

import asyncio
import json

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.channels import TASK_REPORT_SIGNAL, TaskReport
    from contracts.task import LoopState, TaskInput, TaskOutcome, TaskState
    from core.messages import ToolCallRequest
    from workflows import policy


def progress_text(turn: int, call: ToolCallRequest) -> str:
    """The call a task runs, as a person in the chat reads it (``step 3: shell ls -la``); empty
    for the ``message`` tool, whose call is the answer or the question itself, shown as such.
    (Still reported, empty: a report less would be a command less, and break the replay of a
    task that ran before this.)"""
    if call.name == "message":
        return ""
    return f"step {turn}: {call.name} {policy.shorten(policy.tool_detail(call), 200)}".rstrip()


def call_text(tool: str, arguments: dict) -> str:
    """A call as a person approves it: a shell command as it is, else its arguments."""
    command = arguments.get("command") if tool == "shell" else None
    return command if isinstance(command, str) else json.dumps(arguments, ensure_ascii=False)


class ChatReporter:
    def __init__(self, task: TaskInput) -> None:
        self.conversation = task.conversation
        self.sending: list[asyncio.Task] = []

    def phase(self, state: LoopState, call: ToolCallRequest | None) -> None:
        """The loop entered ``state.phase``: tell the conversation when a person cares."""
        if self.conversation is None:
            return
        phase = state.phase
        if phase == TaskState.EXECUTING_TOOL and call is not None:
            self._send(TaskReport(task_id="", kind="progress", text=progress_text(state.turn, call)))
        elif phase == TaskState.WAITING_APPROVAL and state.pending is not None:
            p = state.pending
            text = f"{p.tool}: {call_text(p.tool, p.arguments)}\n({p.danger}: {p.reason})"
            self._send(TaskReport(task_id="", kind="approval", text=text, call_id=p.call_id, digest=p.digest))
        elif phase == TaskState.WAITING_REPLY and state.question:
            self._send(TaskReport(task_id="", kind="question", text=state.question))

    async def ended(self, outcome: TaskOutcome, state: LoopState) -> None:
        """The task's end, and the messages it was sent but never read."""
        if self.conversation is None:
            return
        failed = outcome.status != TaskState.DONE
        text = outcome.final_text if not failed else f"{outcome.status.value.lower()}: {outcome.error or ''}".strip()
        # The end goes last: after the reports still on their way. A conversation gone is no
        # failure of the task.
        await asyncio.gather(*self.sending, return_exceptions=True)
        self._send(TaskReport(task_id="", kind="ended", text=text, failed=failed, unread=list(state.inbox),
                              heard=list(state.heard)))
        await asyncio.gather(*self.sending, return_exceptions=True)
        self.sending = []

    def _send(self, report: TaskReport) -> None:
        assert self.conversation is not None
        report.task_id = workflow.info().workflow_id
        handle = workflow.get_external_workflow_handle(self.conversation)
        for done in [t for t in self.sending if t.done() and not t.cancelled()]:
            done.exception()  # a conversation gone is no failure of the task: looked at, dropped
        self.sending = [t for t in self.sending if not t.done()]
        self.sending.append(asyncio.ensure_future(handle.signal(TASK_REPORT_SIGNAL, report)))
