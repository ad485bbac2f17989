"""Self-verification before completion (seed 001): a task that changed files or ran
commands is asked once to check its work when the model first says it is done.

The model's `message` type `result` ends a task; models often send it without running the
test they were asked to make pass. So when the task changed something since the last check
(``LoopState.changes``: calls that ran OK and are not read-only, as their tools declared),
the first result is answered with a reminder (``SystemReminder`` reason ``verify``: what was
asked, what changed, run what proves it) instead of ending the task; the next result ends
it, whatever ran in between. A task that only read, or one started with ``verify="off"``,
finishes at once. What counts is changes, not commands: a shell command the gate reads as
read-only (``cat hello.txt``, ``git diff``: ``shell_policy.is_read_only``, declared by the
tool and recorded with the call, so the workflow only reads it) changes nothing, and run OK
after a change it is the check itself: the changes before it need no reminder. A command
that may write (``pytest``, ``make``) is a change, as before. This needs no patch: no shell
call recorded before it declared itself read-only, so a history replays as it ran. The
reminder costs one turn or more, counted in the turn limit, and is left out when the limit
leaves no room to check and finish.

A mixin of the task workflow: deterministic, no I/O.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from core.entries import SystemReminder
    from core.messages import ToolCallRequest
    from core.tool_outcome import ToolOutcome
    from workflows import policy
    from workflows.engine import LoopBase

TURNS_TO_CHECK = 2  # a turn to run the check and one to finish again
CHECKS = "shell"  # the tool whose read-only calls check what changed before them


class VerifyMixin(LoopBase):
    def _note_change(self, call: ToolCallRequest, result: ToolOutcome) -> None:
        """Remember a call that changed something (it ran OK and is not read-only); forget
        the changes a read-only command checked."""
        if result.status != "ok":
            return
        if not call.read_only:
            line = policy.change_line(call)
            if line not in self.state.changes:
                self.state.changes.append(line)
        elif call.name == CHECKS:
            self.state.changes.clear()

    def _verify_before_finishing(self) -> bool:
        """Called when the model sends its result: True (and a reminder appended) when the
        task must check its work first; False when it may finish."""
        state, task = self.state, self.task
        asked, state.verify_asked = state.verify_asked, False
        # patched(): runs of the previous release finish at their first result.
        if not self._release or task.verify == "off" or asked or not state.changes:
            return False
        if state.turn + TURNS_TO_CHECK > task.max_iterations:
            return False  # no room left to check and finish: a reminder would only fail the task
        self._append(SystemReminder(text=policy.verify_reminder(task.instruction, state.changes), reason="verify"))
        state.changes.clear()
        state.verify_asked = True
        return True
