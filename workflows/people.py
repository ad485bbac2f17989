"""Waiting for people: approvals, replies and interjections.

A mixin of the task workflow (``workflows/task.py``): deterministic, no I/O.
Decisions arrive through the ``approve`` signal or the ``decide`` update,
messages through ``interject``; waits are ``workflow.wait_condition``, so they
survive worker and server restarts for free.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.activities import REDACT_ACTIVITY
    from contracts.task import ApprovalDecision, Interjection, PendingApproval, TaskState
    from core.entries import StatusNotice
    from core.messages import ToolCallRequest
    from core.permissions import allowing, remembered
    from core.tool_outcome import ToolOutcome
    from workflows import metrics, policy
    from workflows.approvals import approval_details
    from workflows.engine import LoopBase


class PeopleMixin(LoopBase):

    async def _permit(self, call: ToolCallRequest) -> tuple[ToolOutcome | None, str | None]:
        """Whether ``call`` runs: (its refusal, None), or (None, the digest it runs under as
        approved, None when it needs no approval). A deny rule refuses it whatever the approval
        mode; an allow rule (standing, or remembered from an answer) lets it run without asking."""
        permissions = self.task.permissions
        rule = permissions.denying(call)
        if rule is not None:
            source = f" ({permissions.source})" if permissions.source else ""
            return ToolOutcome(status="error", content=policy.DENIED_BY_RULE.format(rule=rule.text, source=source)), None
        if not self.task.approval.requires(call.danger):
            return None, None
        rule = allowing([*permissions.allow, *self.state.allowed], call)
        if rule is not None:
            self._append(StatusNotice(text=f"{call.name} call runs without asking: allowed by the rule {rule.text}"))
            return None, call.digest
        denial = await self._wait_for_approval(call)
        return (denial, None) if denial is not None else (None, call.digest)

    async def _wait_for_approval(self, call: ToolCallRequest) -> ToolOutcome | None:
        """Block until a decision, a stop, an interjection or the timeout. None means approved."""
        state, asked, rule = self.state, workflow.now(), remembered(call)
        state.pending = PendingApproval(
            call_id=call.id,
            tool=call.name,
            arguments=call.arguments,
            danger=call.danger or "unclassified",
            reason=call.danger_reason or f"approval mode is {self.task.approval.value}",
            turn=state.turn,
            requested_at=asked,
            digest=call.digest,
            rule=rule.text if rule else None,
        )
        state.decision = None
        metrics.approval_requested(call.name)
        self._set_state(TaskState.WAITING_APPROVAL, f"waiting for approval: {policy.tool_summary(call)}", call)
        workflow.set_current_details(approval_details(state.pending, policy.tool_detail(call), workflow.info().workflow_id))
        timeout = self.task.approval_timeout_s
        try:
            await workflow.wait_condition(
                lambda: state.decision is not None or self._interrupted(),
                timeout=timedelta(seconds=timeout) if timeout else None,
                timeout_summary="approval timeout",
            )
        except TimeoutError:
            state.decision = ApprovalDecision(
                approved=False, reason=f"no decision within {timeout:g} s", decided_by="timeout"
            )
        decision, state.pending = state.decision, None
        if decision is None:  # a stop or an interjection supersedes the call
            why = "the task was stopped" if state.stop_reason is not None else "the user sent a new message instead"
            decision = ApprovalDecision(approved=False, reason=why, decided_by="superseded")
        verdict = "approved" if decision.approved else "denied"
        metrics.approval_decided(call.name, verdict, workflow.now() - asked)
        note = f"{call.name} call {verdict} by {decision.decided_by} at {workflow.now().isoformat()}"
        self._append(StatusNotice(text=f"{note}: {decision.reason}" if decision.reason else note))
        if decision.approved:
            if decision.remember and rule is not None:
                self.state.allowed.append(rule)
                self._append(StatusNotice(
                    text=f"{decision.decided_by} allowed {rule.text} for the rest of this task: "
                         "calls it matches run without asking"))
            return None
        reason = f" Reason: {decision.reason}" if decision.reason else ""
        return ToolOutcome(
            status="error", content=f"[denied] This call was not run: {decision.decided_by} denied it.{reason}"
        )

    async def _wait_for_reply(self, question: str) -> None:
        self.state.question = question
        self._set_state(TaskState.WAITING_REPLY, f"waiting for a reply: {question[:80]}")
        await workflow.wait_condition(self._interrupted)
        self.state.question = None

    def _decision_problem(self, decision: ApprovalDecision) -> str | None:
        """Why ``decision`` is refused, or None: it must name the pending call by its digest
        (the call as the person saw it), and come before any other decision."""
        pending = self.state.pending
        if pending is None:
            return "no tool call is waiting for approval"
        if decision.call_id is not None and decision.call_id != pending.call_id:
            return f"call {decision.call_id} is not pending (pending: {pending.call_id})"
        if decision.digest is None:
            return (f"the decision names no call digest: it must carry the digest of the call it decides "
                    f"(pending: {pending.tool} call {pending.call_id}, its digest in `status`)")
        elif decision.digest != pending.digest:
            return (
                f"the pending call changed since it was shown: now {pending.tool} "
                f"{policy.shorten(str(pending.arguments), 200)}; look again and decide on that call"
            )
        if self.state.decision is not None:
            return "the pending call has already been decided"
        return None

    def _receive(self, message: Interjection) -> None:
        """An interjection, queued for the next turn; a chat's is named back when the task ends."""
        self.state.inbox.append(message)
        if message.ref is not None:
            self.state.heard.append(message.ref)

    async def _deliver_interjections(self) -> None:
        while self.state.inbox:
            message = self.state.inbox.pop(0)
            # A raw `temporal workflow signal` may carry a secret in clear: it is redacted before
            # it enters the context, the store or the event stream. A local activity, so the
            # history records only the redacted text.
            text = await workflow.execute_local_activity(
                REDACT_ACTIVITY, message.text, result_type=str, start_to_close_timeout=policy.REDACT_TIMEOUT,
                summary="redact · a person's message",
            )
            self._append(await self._person_says(text, message.attachments))
