"""The CLI's commands: each takes the parsed arguments and returns the exit code."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from contextlib import AsyncExitStack
from datetime import timedelta

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError

from activities.llm import ProviderSettings
from activities.mcp_sessions import load_worker_config
from cli import evals, listing, mcp_serve, rewind, schedule
from cli.follow import Follower, ask_person
from cli.render import approval_text, make_console, safe, status_lines
from cli.screen import ConsoleSink
from cli.sinks import JsonSink
from cli.subagents import approval_holder, subagent_call
from cli.tasks import (
    MAX_INTERJECTION,
    QUERY_TIMEOUT,
    UserError,
    closed_outcome,
    configured_model,
    describe,
    finished_status,
    start_task,
    task_input,
    ui_link,
    who,
)
from cli.usage import HistoryUsage
from cli.workers import RESTART_WAIT, ask_status, unpin, worker_absence
from contracts.task import ApprovalDecision, Interjection, PendingApproval, TaskState, TaskStatus
from runtime.secrets import SecretStore
from runtime.store import open_store
from temporal.client import connect, is_embedded
from tools import sandbox
from worker import build_worker, check_browser, check_sandbox, task_queue
from workflows.task import AgentTaskWorkflow

CONFIRM_WAIT_S = 5.0  # how long `approve` waits for a worker to confirm a decision

def make_follower(client: Client, workflow_id: str, *, json_mode: bool = False):
    console = make_console()
    sink = JsonSink(workflow_id, usage=HistoryUsage(client, workflow_id)) if json_mode else ConsoleSink(console)
    interactive = sys.stdin.isatty() and not json_mode
    followed = workflow_id

    async def ask(client: Client, workflow_id: str, status: TaskStatus, interactive: bool) -> None:
        if not json_mode:  # workflow_id: the task followed, or one of its sub-agents
            parent = followed if workflow_id != followed else None
            await ask_person(client, workflow_id, status, console, interactive, who(), parent)

    return Follower(client, workflow_id, sink, interactive=interactive, ask=ask)


async def local_worker(stack: AsyncExitStack, client: Client, queue: str, settings: ProviderSettings | None):
    try:
        box = check_sandbox()
        load_worker_config()  # a bad AGENT_MCP_CONFIG is one line, not a traceback
    except (sandbox.SandboxUnavailable, ValueError) as err:
        raise UserError(str(err)) from None
    if not box.active:
        print(box.notice(), file=sys.stderr)
    if browser := check_browser():
        print(browser, file=sys.stderr)
    store = open_store()
    await store.check()  # a store that cannot work is one line now, not a failed task later
    stack.push_async_callback(store.close)
    worker = build_worker(client, queue=queue, settings=settings, store=store)
    await stack.enter_async_context(worker)


# ---- commands ------------------------------------------------------------------


async def cmd_run(args: argparse.Namespace) -> int:
    console = make_console()
    model = "demo-scripted" if args.demo else configured_model(args)
    inp = task_input(args, model)
    if args.demo:  # the scripted demo model speaks the OpenAI wire, and nothing to fail over to
        inp = inp.model_copy(update={"provider": "openai", "fallbacks": []})
    client = await connect()
    async with AsyncExitStack() as stack:
        queue, settings = task_queue(), None
        if args.demo:
            from fakes.scripted import ScriptedModelServer, demo_steps

            server = stack.enter_context(ScriptedModelServer(demo_steps(inp.instruction)))
            settings = ProviderSettings(openai_base_url=server.url, openai_api_key=None)
            queue = f"agent-demo-{uuid.uuid4().hex[:8]}"  # only this process's worker serves it
        if args.demo or is_embedded():
            await local_worker(stack, client, queue, settings)
        started = time.monotonic()
        workflow_id = await start_task(client, inp, queue)
        console.print(f"[dim]task {workflow_id} · {ui_link(client, workflow_id)}[/]")
        try:
            outcome = await make_follower(client, workflow_id).run(lambda: closed_outcome(client, workflow_id), started)
        except (KeyboardInterrupt, asyncio.CancelledError):
            console.print(f"\ntask {workflow_id} goes on; follow it with: python starter.py watch {workflow_id}")
            raise
        return 0 if outcome.status == TaskState.DONE else 1


async def cmd_start(args: argparse.Namespace) -> int:
    inp = task_input(args, configured_model(args))
    client = await connect()
    workflow_id = await start_task(client, inp, task_queue())
    print(f"started; follow it with: python starter.py watch {workflow_id}", file=sys.stderr)
    print(workflow_id)
    return 0


async def cmd_status(args: argparse.Namespace) -> int:
    client = await connect()
    desc = await describe(client, args.id)
    if desc.status == WorkflowExecutionStatus.RUNNING:
        answer = await ask_status(client, args.id, desc.task_queue, wait=QUERY_TIMEOUT, patience=RESTART_WAIT)
        if answer is None:
            raise UserError(f"task {args.id} is running but no worker answers its status query")
        status = answer
    else:
        status = await finished_status(client, desc, await closed_outcome(client, args.id))
    if args.json:
        payload = status.model_dump(mode="json")
        payload.update(workflow_id=args.id, temporal_status=desc.status.name if desc.status else None, ui=ui_link(client, args.id))
        print(json.dumps(payload))
    else:
        print("\n".join(status_lines(args.id, status, ui_link(client, args.id))))
    return 0


async def cmd_watch(args: argparse.Namespace) -> int:
    client = await connect()
    desc = await describe(client, args.id)
    async with AsyncExitStack() as stack:
        if is_embedded():
            # Runs a running task on; answers the events query of a finished one by replaying it.
            await local_worker(stack, client, desc.task_queue, None)
        follower = make_follower(client, args.id, json_mode=args.json)
        outcome = await follower.run(lambda: closed_outcome(client, args.id))
    return 0 if outcome.status == TaskState.DONE else 1


async def cmd_stop(args: argparse.Namespace) -> int:
    client = await connect()
    desc = await describe(client, args.id)
    if desc.status != WorkflowExecutionStatus.RUNNING:
        raise UserError(f"task {args.id} is not running ({desc.status.name.lower() if desc.status else 'unknown'})")
    await client.get_workflow_handle(args.id).signal(AgentTaskWorkflow.stop, args.reason)
    print(f"stop requested for {args.id}")
    return 0


async def cmd_approve(args: argparse.Namespace) -> int:
    """Decide on the call the person saw: named by ``--call``, or shown here and confirmed
    (at the prompt, or by ``--yes``), and bound to its exact arguments, so a call that
    changed in the meantime is refused rather than approved."""
    client = await connect()
    desc = await describe(client, args.id)
    verdict = "deny" if args.deny else "approve"
    call_id, digest = args.call, None
    if call_id is None:
        target, pending = await pending_call(client, args.id, desc.task_queue)
        whose = f" (sub-agent {safe(target)} of {safe(args.id)})" if target != args.id else ""
        print(f"pending{whose}: {pending.tool} call {pending.call_id}: {safe(approval_text(pending))}\n"
              f"  ({safe(pending.danger)}: {safe(pending.reason)})")
        if not args.yes:
            if not sys.stdin.isatty():
                raise UserError(f"name the call to {verdict}: --call {pending.call_id} "
                                "(or --yes to decide on the call shown above)")
            answer = (await asyncio.to_thread(input, f"{verdict} this call? [y/N] ")).strip().lower()
            if answer not in ("y", "yes"):
                print("nothing sent")
                return 1
        call_id, digest = pending.call_id, pending.digest or None
    else:  # a sub-agent's call, named by the parent's id, is decided in the sub-agent
        target = await approval_holder(client, args.id, call_id, timedelta(seconds=CONFIRM_WAIT_S / 2))
        await unpin(client, target)  # no worker was asked: the one it is pinned to may be dead
    handle = client.get_workflow_handle(target)
    decision = ApprovalDecision(
        approved=not args.deny, call_id=call_id, digest=digest, reason=args.reason, decided_by=who()
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
              "and takes effect when a worker runs the task (start one with `python worker.py`)")
        return 0
    print(f"{'denied' if args.deny else 'approved'}: {decided.tool} call {decided.call_id} of {target}")
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


async def cmd_interject(args: argparse.Namespace) -> int:
    client = await connect()
    desc = await describe(client, args.id)
    if desc.status != WorkflowExecutionStatus.RUNNING:
        raise UserError(f"task {args.id} is not running")
    if len(args.text.encode()) > MAX_INTERJECTION:
        raise UserError(f"the message is {len(args.text.encode()):,} bytes; the limit is {MAX_INTERJECTION:,}: "
                        "save it in a file in the workspace and point the task at it")
    text = SecretStore.from_env().redact(args.text)
    await client.get_workflow_handle(args.id).signal(  # durable: it waits in the history for a worker
        AgentTaskWorkflow.interject, Interjection(text=text, sent_by=who())
    )
    absent = await worker_absence(client, args.id, desc.task_queue)
    if absent:
        print(f"{absent}: the message was delivered to {args.id} and takes effect when a worker starts "
              "(python worker.py)")
    else:
        print(f"message delivered to {args.id}")
    return 0


# ---- entry -----------------------------------------------------------------------


COMMANDS = {
    "run": cmd_run, "start": cmd_start, "status": cmd_status,
    "watch": cmd_watch, "stop": cmd_stop, "list": listing.cmd_list,
    "approve": cmd_approve, "interject": cmd_interject, "reply": cmd_interject,
    "schedule": schedule.cmd_schedule,
    "rewind": rewind.cmd_rewind, "fork": rewind.cmd_fork,
    "eval": evals.cmd_eval, "record": evals.cmd_record,
    "mcp-serve": mcp_serve.cmd_mcp_serve,
}
