"""Waiting for people: approvals, replies and interjections, and cutting off running work.

A mixin of the task workflow (``workflows/task.py``): deterministic, no I/O.
Decisions arrive through the ``approve`` signal or the ``decide`` update,
messages through ``interject``; waits are ``workflow.wait_condition``, so they
survive worker and server restarts for free.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError

with workflow.unsafe.imports_passed_through():
    from providers.types import ToolCallRequest
    from tools.base import ToolResult as HandlerResult
    from workflows import policy
    from workflows.context import StatusNotice, UserMessage
    from workflows.models import ApprovalDecision, PendingApproval, TaskState


class PeopleMixin:

    async def _wait_for_approval(self, call: ToolCallRequest) -> HandlerResult | None:
        """Block until a decision, a stop, an interjection or the timeout. None means approved."""
        self._pending = PendingApproval(
            call_id=call.id,
            tool=call.name,
            arguments=call.arguments,
            danger=call.danger or "unclassified",
            reason=call.danger_reason or f"approval mode is {self._task.approval.value}",
            turn=self._turn,
            requested_at=workflow.now(),
        )
        self._decision = None
        self._set_state(TaskState.WAITING_APPROVAL, f"waiting for approval: {policy.tool_summary(call)}")
        timeout = self._task.approval_timeout_s
        try:
            await workflow.wait_condition(
                lambda: self._decision is not None or self._stop_reason is not None or bool(self._inbox),
                timeout=timedelta(seconds=timeout) if timeout else None,
                timeout_summary="approval timeout",
            )
        except asyncio.TimeoutError:
            self._decision = ApprovalDecision(
                approved=False, reason=f"no decision within {timeout:g} s", decided_by="timeout"
            )
        decision, self._pending = self._decision, None
        if decision is None:  # a stop or an interjection supersedes the call
            why = "the task was stopped" if self._stop_reason is not None else "the user sent a new message instead"
            decision = ApprovalDecision(approved=False, reason=why, decided_by="superseded")
        verdict = "approved" if decision.approved else "denied"
        note = f"{call.name} call {verdict} by {decision.decided_by} at {workflow.now().isoformat()}"
        self._append(StatusNotice(text=f"{note}: {decision.reason}" if decision.reason else note))
        if decision.approved:
            return None
        reason = f" Reason: {decision.reason}" if decision.reason else ""
        return HandlerResult(
            status="error", content=f"[denied] This call was not run: {decision.decided_by} denied it.{reason}"
        )

    async def _wait_for_reply(self, question: str) -> None:
        self._question = question
        self._set_state(TaskState.WAITING_REPLY, f"waiting for a reply: {question[:80]}")
        await workflow.wait_condition(lambda: bool(self._inbox) or self._stop_reason is not None)
        self._question = None

    def _decision_problem(self, decision: ApprovalDecision) -> str | None:
        if self._pending is None:
            return "no tool call is waiting for approval"
        if decision.call_id is not None and decision.call_id != self._pending.call_id:
            return f"call {decision.call_id} is not pending (pending: {self._pending.call_id})"
        if self._decision is not None:
            return "the pending call has already been decided"
        return None

    def _deliver_interjections(self) -> None:
        while self._inbox:
            message = self._inbox.pop(0)
            self._append(UserMessage(text=message.text))

    async def _interruptible(self, handle: Any) -> Any:
        """Await an activity; cancel it on a stop or an interjection. None means interrupted."""
        interrupt = asyncio.ensure_future(
            workflow.wait_condition(lambda: self._stop_reason is not None or bool(self._inbox))
        )
        await workflow.wait([handle, interrupt], return_when=asyncio.FIRST_COMPLETED)
        if handle.done():
            interrupt.cancel()
            return handle.result()
        handle.cancel()
        try:
            await handle
        except (ActivityError, CancelledError, asyncio.CancelledError):
            pass
        return None
