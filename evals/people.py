"""The person a case scripts: decides approvals, answers questions, interjects.

It watches the trial through the workflow's ``status`` query and acts through the same
doors a person uses: the ``decide`` update for a pending call (with an update id per call,
so a repeated decision is the same decision), the ``interject`` signal for a reply or an
interjection. What it already did is read back from the history when a harness attaches
to a trial that was running before it started (a resumed run), so nothing is sent twice.

An interjection is due once the task has had ``turn`` answers from the model. It is never
sent while the model is thinking (that would cut the call off, and a scripted or replayed
model would then answer out of step), unless the task has gone a whole turn past it.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

from temporalio.client import WorkflowHandle, WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError as UpdateTimeout
from temporalio.service import RPCError

from contracts.task import ApprovalDecision, Interjection, TaskState, TaskStatus
from evals.suite import Answer, Case
from evals.transcript import Transcript
from workflows.task import AgentTaskWorkflow

WHO = "eval harness"
ANSWER_WAIT = timedelta(seconds=5)
NO_REPLY = "I have nothing to add: make a reasonable choice and carry on."


class Person:
    def __init__(self, case: Case, handle: WorkflowHandle, poll_s: float = 0.25) -> None:
        self.case, self.handle = case, handle
        self.poll_s = 0.1 if case.interjections else poll_s
        self.decisions = 0  # approvals decided so far
        self.replies = 0  # questions answered so far
        self.sent = [False] * len(case.interjections)
        self._decided: set[str] = set()
        self._answered_turns: set[int] = set()
        self._done = asyncio.Event()

    def done(self) -> None:
        """The trial has ended: stop after the look under way (never cut a query off)."""
        self._done.set()

    def resume(self, transcript: Transcript) -> None:
        """Take up a trial that ran before this harness: count what was already sent."""
        messages = [e.message.text for e in transcript.people if e.message and not e.reply]
        self.decisions = sum(e.decision is not None for e in transcript.people)
        self.replies = sum(e.reply for e in transcript.people)
        for i, planned in enumerate(self.case.interjections):
            if planned.text in messages:
                messages.remove(planned.text)
                self.sent[i] = True

    async def attend(self) -> None:
        """Act on the trial until it ends, or ``done()`` says it has."""
        while not self._done.is_set():
            try:
                status: TaskStatus = await self.handle.query(AgentTaskWorkflow.status, rpc_timeout=ANSWER_WAIT)
            except (RPCError, WorkflowQueryFailedError):
                with contextlib.suppress(TimeoutError):  # no worker answers now (one restarting): ask again
                    await asyncio.wait_for(self._done.wait(), self.poll_s * 4)
                continue
            if status.state.finished or self._done.is_set():
                return
            await self._interject(status)
            if status.state == TaskState.WAITING_APPROVAL and status.pending_approval is not None:
                await self._decide(status)
            elif status.state == TaskState.WAITING_REPLY:
                await self._reply(status)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._done.wait(), self.poll_s)

    async def _interject(self, status: TaskStatus) -> None:
        for i, planned in enumerate(self.case.interjections):
            if self.sent[i]:
                continue
            thinking = status.state in (TaskState.THINKING, TaskState.INITIALIZING)
            answers = status.turn if not thinking else status.turn - 1  # the call under way has not answered
            if answers >= planned.turn and (not thinking or answers > planned.turn):
                await self.handle.signal(AgentTaskWorkflow.interject, Interjection(text=planned.text, sent_by=WHO))
                self.sent[i] = True
                if status.state == TaskState.WAITING_REPLY:
                    self._answered_turns.add(status.turn)  # it answers the question too

    async def _decide(self, status: TaskStatus) -> None:
        pending = status.pending_approval
        assert pending is not None
        if pending.call_id in self._decided:
            return
        answer = self._answer()
        decision = ApprovalDecision(approved=answer.approve, call_id=pending.call_id, digest=pending.digest or None,
                                    reason=answer.reason, decided_by=WHO)
        try:
            await self.handle.execute_update(AgentTaskWorkflow.decide, decision, id=f"eval-decide-{pending.call_id}",
                                             rpc_timeout=ANSWER_WAIT)
        except (UpdateTimeout, RPCError):
            self.decisions -= 1  # not taken: decided again on the next look
            return
        except WorkflowUpdateFailedError:
            pass  # decided already (a resumed harness), or superseded
        self._decided.add(pending.call_id)

    def _answer(self) -> Answer:
        policy = self.case.approvals
        self.decisions += 1
        if policy == "approve":
            return Answer(approve=True, reason="approved by the eval's policy")
        if policy == "deny":
            return Answer(approve=False, reason="denied by the eval's policy")
        if self.decisions <= len(policy):
            return policy[self.decisions - 1]
        return Answer(approve=False, reason="the eval's script has no more answers")

    async def _reply(self, status: TaskStatus) -> None:
        if status.turn in self._answered_turns:
            return
        replies = self.case.replies
        text = replies[self.replies] if self.replies < len(replies) else NO_REPLY
        await self.handle.signal(AgentTaskWorkflow.interject, Interjection(text=text, sent_by=WHO))
        self.replies += 1
        self._answered_turns.add(status.turn)
