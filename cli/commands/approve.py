"""``approve ID``: decide on the call a task (or one of its sub-agents) waits for.

The decision names the call the person saw, by ``--call`` (its digest read from the task's
history) or shown here and confirmed (at the prompt, or by ``--yes``), and is bound to its
exact arguments, so a call that changed in the meantime is refused rather than approved. A
worker confirms it (an update); with none answering it goes as a signal, applied later.
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError

from cli.background import connect
from cli.hints import invoked
from cli.prompt import read_line
from cli.render import approval_text, safe
from cli.subagents import approval_holder, subagent_call
from cli.tasks import UserError, describe, who
from cli.workers import RESTART_WAIT, ask_status, unpin
from contracts.activities import LLM_ACTIVITY
from contracts.task import ApprovalDecision, PendingApproval
from core.messages import TurnResult
from workflows.task import AgentTaskWorkflow

CONFIRM_WAIT_S = 5.0  # how long `approve` waits for a worker to confirm a decision


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("approve", help="approve (or --deny) the pending tool call (the task's, or its sub-agent's)")
    s.add_argument("id")
    s.add_argument("--deny", action="store_true")
    s.add_argument("--remember", action="store_true",
                   help="yes, and allow commands like this one for the rest of the task (its rule is shown)")
    s.add_argument("--reason", default="")
    s.add_argument("--call", help="the pending call's id (without it, the call is shown and confirmed)")
    s.add_argument("--yes", action="store_true", help="decide on the call shown, without asking")
    s.add_argument("--signal", action="store_true", help="send as a signal, without confirmation")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    desc = await describe(client, args.id)
    verdict = "deny" if args.deny else "approve"
    call_id, digest = args.call, None
    if call_id is None:
        target, pending = await pending_call(client, args.id, desc.task_queue)
        whose = f" (sub-agent {safe(target)} of {safe(args.id)})" if target != args.id else ""
        print(f"pending{whose}: {pending.tool} call {pending.call_id}: {safe(approval_text(pending))}\n"
              f"  ({safe(pending.danger)}: {safe(pending.reason)})")
        if args.remember and not args.deny and pending.rule is None:
            raise UserError("no rule can be made for this call (a command line that is not one plain command): "
                            "approve it without --remember")
        if pending.rule and not args.deny:
            print(f"  a = yes, and allow {safe(pending.rule)} for the rest of this task")
        if not args.yes:
            if not sys.stdin.isatty():
                raise UserError(f"name the call to {verdict}: --call {pending.call_id} "
                                "(or --yes to decide on the call shown above)")
            choices = "y/N/a" if pending.rule and not args.deny else "y/N"
            answer = (await read_line(f"{verdict} this call? [{choices}] ", sys.stdout) or "").lower()
            args.remember = args.remember or (answer in ("a", "always") and choices == "y/N/a")
            if answer not in ("y", "yes") and not args.remember:
                print("nothing sent")
                return 1
        call_id, digest = pending.call_id, pending.digest or None
    else:  # a sub-agent's call, named by the parent's id, is decided in the sub-agent
        target = await approval_holder(client, args.id, call_id, timedelta(seconds=CONFIRM_WAIT_S / 2))
        await unpin(client, target)  # no worker was asked: the one it is pinned to may be dead
        digest = await recorded_digest(client, target, call_id)
    handle = client.get_workflow_handle(target)
    decision = ApprovalDecision(
        approved=not args.deny, call_id=call_id, digest=digest, reason=args.reason, decided_by=who(),
        remember=args.remember and not args.deny,
    )
    if args.signal:
        await handle.signal(AgentTaskWorkflow.approve, decision)
        print(f"decision sent to {target} (as a signal: not confirmed)")
        return 0
    try:
        # An update is confirmed by a worker; with none polling it would wait forever.
        decided = await handle.execute_update(
            AgentTaskWorkflow.decide, decision, rpc_timeout=timedelta(seconds=CONFIRM_WAIT_S)
        )
    except WorkflowUpdateFailedError as err:
        raise UserError(f"decision rejected: {getattr(err.cause, 'message', err.cause)}") from None
    except (WorkflowUpdateRPCTimeoutOrCancelledError, RPCError):
        await handle.signal(AgentTaskWorkflow.approve, decision)  # durable: applied when a worker comes
        print(f"no worker answered within {CONFIRM_WAIT_S:g} s: the decision was sent to {target} as a signal "
              f"and takes effect when a worker runs the task (start one with `{invoked('worker', args.settings.temporal)}`)")
        return 0
    allowed = f"; {decided.rule} is allowed for the rest of the task" if decision.remember and decided.rule else ""
    print(f"{'denied' if args.deny else 'approved'}: {decided.tool} call {decided.call_id} of {target}{allowed}")
    return 0


async def pending_call(client: Client, workflow_id: str, queue: str) -> tuple[str, PendingApproval]:
    """The call waiting for approval, read from the task (so what is shown is what is decided):
    the task's own or, when it has none, one of its sub-agents'; with the id of the workflow
    that holds it."""
    status = await ask_status(client, workflow_id, queue, wait=timedelta(seconds=CONFIRM_WAIT_S), patience=RESTART_WAIT)
    if status is None:
        raise UserError(
            "no worker answered, so the pending call cannot be shown: "
            "name it with --call CALL_ID (shown by `watch` and `status` when the task asked)"
        )
    if status.pending_approval is not None:
        return workflow_id, status.pending_approval
    found = await subagent_call(client, workflow_id)
    if found is None:
        raise UserError(f"task {workflow_id} has no tool call waiting for approval (nor have its sub-agents)")
    return found


async def recorded_digest(client: Client, workflow_id: str, call_id: str) -> str | None:
    """The digest of the call named ``call_id`` as the task's history records it (the model
    calls' results), read without a worker; None when no call has that id (the task then
    refuses the decision in its own words)."""
    llm_calls: set[int] = set()
    digest = None
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            if event.activity_task_scheduled_event_attributes.activity_type.name == LLM_ACTIVITY:
                llm_calls.add(event.event_id)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = event.activity_task_completed_event_attributes
            if attrs.scheduled_event_id in llm_calls:
                (turn,) = await client.data_converter.decode(list(attrs.result.payloads), [TurnResult])
                digest = next((c.digest for c in turn.tool_calls if c.id == call_id), digest)
    return digest
