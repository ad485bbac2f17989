"""Asking the person at the terminal: an approval (yes, no, or yes and allow calls like this
for the rest of the task) or a reply, inline in what ``watch`` and ``run`` show. The prompt
reads without a thread (``cli/prompt.py``), so it is withdrawn when the call is decided
elsewhere (another terminal, the Temporal UI) and Ctrl-C at it ends the command at once."""

from __future__ import annotations

import contextlib

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError

from cli.calls import render_call
from cli.hints import invoked
from cli.prompt import read_line
from cli.render import safe
from cli.tasks import QUERY_TIMEOUT
from contracts.task import ApprovalDecision, Interjection, PendingApproval, TaskStatus
from core.entries import StatusNotice
from core.settings import TemporalSettings
from runtime.secrets import SecretStore
from workflows.task import AgentTaskWorkflow


async def ask_person(
    client: Client, workflow_id: str, status: TaskStatus, console, interactive: bool, who: str, parent: str | None,
    secrets: SecretStore, temporal: TemporalSettings,
) -> None:
    """Ask inline for an approval or a reply when a person is at the terminal; else say how.
    ``parent``: the task followed, when ``workflow_id`` is one of its sub-agents. A question
    decided elsewhere meanwhile (another terminal, the Temporal UI) is withdrawn."""
    handle = client.get_workflow_handle(workflow_id)
    pending = status.pending_approval
    whose = f" [dim](sub-agent {safe(workflow_id)} of {safe(parent)})[/]" if parent else ""
    if pending is not None:
        console.print(f"[bold yellow]? approval needed[/]{whose} {safe(pending.tool)} "
                      f"[dim]({safe(pending.danger)}: {safe(pending.reason)})[/]")
        if parent:  # the task's own call is on screen, as its entry: one line per call
            render_call(console, pending.tool, pending.arguments)  # a gated write as its diff, a command as typed
        if not interactive:
            approve = safe(invoked(f"approve {workflow_id} --call {pending.call_id}", temporal))
            console.print(f"  approve: {approve}   deny: {approve} --deny --reason TEXT")
            if pending.rule:
                console.print(f"  yes, and allow {safe(pending.rule)} for the rest of this task: {approve} --remember")
            return
        decision = await ask_decision(handle, pending, console, who)
        if decision is None:
            await decided_elsewhere(handle, pending, console, say_who=parent is not None)
            return
        try:
            await handle.execute_update(AgentTaskWorkflow.decide, decision)
        except WorkflowUpdateFailedError as err:
            console.print(f"[yellow]· decision not accepted: {safe(str(getattr(err.cause, 'message', err.cause)))}[/]")
    elif status.question is not None:
        console.print(f"[bold yellow]? the {'sub-agent' if parent else 'task'} asks:[/]{whose} {safe(status.question or '')}")
        if not interactive:
            console.print(f"  reply: {safe(invoked(f'reply {workflow_id}', temporal))} \"TEXT\"")
            return
        text = (await read_line("  reply> ", console.file) or "").strip()
        if text:
            text = secrets.redact(text)
            await handle.signal(AgentTaskWorkflow.interject, Interjection(text=text, sent_by=who))


async def ask_decision(handle, pending: PendingApproval, console, who: str) -> ApprovalDecision | None:
    """The person's answer on ``pending``: yes, no, or (when a rule can be made for the call)
    yes and allow calls like it for the rest of the task. None: decided elsewhere first."""

    async def withdrawn() -> bool:
        try:
            now = await handle.query(AgentTaskWorkflow.status, rpc_timeout=QUERY_TIMEOUT)
        except RPCError:
            return False
        return now.pending_approval is None or now.pending_approval.call_id != pending.call_id

    choices = "y/N"
    if pending.rule:
        console.print(f"  [bold]a[/] = yes, and allow {safe(pending.rule)} for the rest of this task")
        choices = "y/N/a"
    answer = await read_line(f"  approve? [{choices}] ", console.file, withdrawn)
    if answer is None:
        return None
    remember = pending.rule is not None and answer.lower() in ("a", "always")
    reason = await read_line("  reason (optional): ", console.file, withdrawn)
    if reason is None:
        return None
    return ApprovalDecision(approved=remember or answer.lower() in ("y", "yes"), call_id=pending.call_id,
                            digest=pending.digest or None, reason=reason, decided_by=who, remember=remember)


async def decline(client: Client, workflow_id: str, status: TaskStatus, who: str) -> None:
    """The person pressed Ctrl-C at the approval prompt of ``status``: the call is declined,
    in their name, so the line the task writes says who decided (a reply asked for is just
    withdrawn: the interruption that follows answers it)."""
    pending = status.pending_approval
    if pending is None:
        return
    decision = ApprovalDecision(approved=False, call_id=pending.call_id, digest=pending.digest or None,
                                reason="Ctrl-C at the prompt", decided_by=who)
    with contextlib.suppress(WorkflowUpdateFailedError, RPCError):  # decided meanwhile, or gone
        await client.get_workflow_handle(workflow_id).execute_update(AgentTaskWorkflow.decide, decision)


async def decided_elsewhere(handle, pending: PendingApproval, console, *, say_who: bool) -> None:
    """The prompt is gone: say so, and who decided (the task's own notice follows in the
    entries shown next; a sub-agent's is looked up)."""
    line = f"{pending.tool} call {pending.call_id} was decided elsewhere"
    if say_who:
        with contextlib.suppress(RPCError):
            page = await handle.query(AgentTaskWorkflow.events, 0, rpc_timeout=QUERY_TIMEOUT)
            notices = [e.text for e in page.entries if isinstance(e, StatusNotice)
                       and e.text.startswith(f"{pending.tool} call ") and " by " in e.text]
            line = notices[-1] if notices else line
    console.print(f"[yellow]· {safe(line)}[/]")
