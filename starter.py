"""The CLI: start, run, watch, status, stop and list agent tasks.

    python starter.py run "TASK" [--workspace DIR]     start, follow live, exit 0 on DONE / 1 on FAILED
    python starter.py start "TASK" [--workspace DIR]   start; the workflow id is the last line
    python starter.py status ID [--json]
    python starter.py watch ID
    python starter.py stop ID [--reason TEXT]
    python starter.py approve ID [--deny] [--reason TEXT] [--call CALL_ID]
    python starter.py interject ID "TEXT"        (also: reply ID "TEXT")
    python starter.py list [--waiting]
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import os
import re
import sys
import time
import uuid
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from activities.llm import ProviderSettings
from activities.log import configure_logging
from activities.secrets import SecretStore
import cli.schedule
from cli.options import add_task_options
from cli.follow import ConsoleSink, Follower, JsonSink, ask_person
from cli.render import make_console, status_lines
from temporal.client import TemporalUnavailable, connect, ensure_search_attributes, is_embedded, ui_base_url
from temporal.server import ServerError
from temporal.tracing import shutdown_tracing
from worker import build_worker, task_queue
from providers.factory import MODES
from workflows import policy
from workflows.models import (
    TASK_WORKFLOW,
    ApprovalDecision,
    ApprovalMode,
    Interjection,
    ModelRef,
    TaskInput,
    TaskOutcome,
    TaskState,
    TaskStatus,
)
from workflows.search_attributes import AGENT_STATE
from workflows.task import AgentTaskWorkflow

QUERY_TIMEOUT = timedelta(seconds=5)
# Temporal refuses payloads over 2 MB: a longer instruction is handed over as a file.
MAX_INLINE_INSTRUCTION = 64 * 1024
MAX_INTERJECTION = 64 * 1024


class UserError(Exception):
    """An error the user caused: printed as one line, no traceback."""


# ---- helpers -------------------------------------------------------------------


def workflow_id_for(instruction: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", instruction.lower()).strip("-")[:32].rstrip("-") or "task"
    return f"task-{slug}-{uuid.uuid4().hex[:6]}"


def instruction_text(text: str, workspace: Path) -> str:
    """The instruction as the task receives it: secrets redacted, and if it is too long to
    travel in a workflow input, saved in the workspace with a short pointer instead."""
    text = SecretStore.from_env().redact(text)
    if len(text.encode()) <= MAX_INLINE_INSTRUCTION:
        return text
    folder = workspace / ".agent"
    folder.mkdir(exist_ok=True)
    path = folder / f"instruction-{uuid.uuid4().hex[:8]}.md"
    path.write_text(text, encoding="utf-8")
    head = " ".join(text[:300].split())
    return (
        f"The full instruction is long ({len(text.encode()):,} bytes) and is saved in the workspace as "
        f"{path.relative_to(workspace)}. Read it with the file tool (in parts, with offset and limit) "
        f"before you start. It begins: {head}..."
    )


def fallback_chain(spec: str | None) -> list[ModelRef]:
    """``provider:model,provider:model`` (from --fallback or AGENT_FALLBACK)."""
    chain = []
    for item in filter(None, (part.strip() for part in (spec or "").split(","))):
        provider, sep, model = item.partition(":")
        if not sep or provider not in MODES or not model:
            raise UserError(f"bad fallback {item!r}: expected provider:model with provider one of {', '.join(MODES)}")
        chain.append(ModelRef(provider=provider, model=model))
    return chain


def default_tools() -> list[str] | None:
    """The engine's default tools, plus web search when a search backend is configured."""
    if os.environ.get("TAVILY_API_KEY"):
        return [*policy.DEFAULT_TOOLS, "search"]
    return None


def task_input(args: argparse.Namespace, model: str) -> TaskInput:
    workspace = Path(args.workspace or os.getcwd()).expanduser().resolve()
    if not workspace.is_dir():
        raise UserError(f"workspace {workspace} is not a directory")
    return TaskInput(
        instruction=instruction_text(args.task, workspace),
        workspace=str(workspace),
        model=model,
        provider=provider_mode(args),
        max_iterations=args.max_iterations,
        fallbacks=fallback_chain(getattr(args, "fallback", None) or os.environ.get("AGENT_FALLBACK")),
        cost_limit_usd=getattr(args, "cost_limit", None),
        failover_after=getattr(args, "failover_after", 3),
        tools=default_tools(),
        approval=ApprovalMode(args.approval),
        approval_timeout_s=args.approval_timeout,
        session=args.session,
    )


def provider_mode(args: argparse.Namespace) -> str:
    mode = getattr(args, "provider", None) or os.environ.get("AGENT_PROVIDER", "openai")
    if mode not in MODES:
        raise UserError(f"unknown provider {mode!r}: AGENT_PROVIDER is one of {', '.join(MODES)}")
    return mode


def configured_model(args: argparse.Namespace) -> str:
    model = getattr(args, "model", None) or os.environ.get("AGENT_MODEL")
    if not model:
        raise UserError(
            "no model configured: set AGENT_MODEL (and OPENAI_BASE_URL, OPENAI_API_KEY), "
            "or try the offline scripted model with --demo"
        )
    return model


def ui_link(client: Client, workflow_id: str) -> str:
    return f"{ui_base_url()}/namespaces/{client.namespace}/workflows/{workflow_id}"


def who() -> str:
    try:
        return f"{getpass.getuser()} (cli)"
    except Exception:  # no user name in this environment
        return "cli"


async def start_task(client: Client, inp: TaskInput, queue: str) -> str:
    inp.search_attributes = await ensure_search_attributes(client)
    workflow_id = workflow_id_for(inp.instruction)
    await client.start_workflow(
        AgentTaskWorkflow.run,
        inp,
        id=workflow_id,
        task_queue=queue,
        memo={"instruction": inp.instruction[:2000], "workspace": inp.workspace, "model": inp.model},
        static_summary=inp.instruction[:200],
    )
    return workflow_id


async def describe(client: Client, workflow_id: str):
    try:
        return await client.get_workflow_handle(workflow_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise UserError(f"no task with id {workflow_id}") from None
        raise


async def memo_model(desc) -> str:
    try:
        return str(await desc.memo_value("model", default=""))
    except Exception:  # an older or foreign memo: the model is only informative here
        return ""


async def closed_outcome(client: Client, workflow_id: str) -> TaskOutcome:
    handle = client.get_workflow_handle(workflow_id, result_type=TaskOutcome)
    try:
        return await handle.result()
    except WorkflowFailureError as err:
        return TaskOutcome(status=TaskState.FAILED, error=f"workflow {err.status.name.lower() if err.status else 'failed'}: {err.cause}")


def make_follower(client: Client, workflow_id: str, *, json_mode: bool = False):
    console = make_console()
    sink = JsonSink(workflow_id) if json_mode else ConsoleSink(console)
    interactive = sys.stdin.isatty() and not json_mode

    async def ask(client: Client, workflow_id: str, status: TaskStatus, interactive: bool) -> None:
        if not json_mode:
            await ask_person(client, workflow_id, status, console, interactive, who())

    return Follower(client, workflow_id, sink, interactive=interactive, ask=ask)


async def local_worker(stack: AsyncExitStack, client: Client, queue: str, settings: ProviderSettings | None):
    worker = build_worker(client, queue=queue, settings=settings)
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
            from providers.scripted import ScriptedModelServer, demo_steps

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
        try:
            status: TaskStatus = await client.get_workflow_handle(args.id).query(
                AgentTaskWorkflow.status, rpc_timeout=QUERY_TIMEOUT
            )
        except RPCError:
            raise UserError(f"task {args.id} is running but no worker answers its status query") from None
    else:
        outcome = await closed_outcome(client, args.id)
        status = TaskStatus(
            state=outcome.status, turn=outcome.turns, usage=outcome.usage, model=await memo_model(desc),
            error=outcome.error, final_text=outcome.final_text or None,
        )
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
    client = await connect()
    await describe(client, args.id)
    handle = client.get_workflow_handle(args.id)
    decision = ApprovalDecision(approved=not args.deny, call_id=args.call, reason=args.reason, decided_by=who())
    if args.signal:
        await handle.signal(AgentTaskWorkflow.approve, decision)
        print(f"decision sent to {args.id} (as a signal: not confirmed)")
        return 0
    try:
        pending = await handle.execute_update(AgentTaskWorkflow.decide, decision)
    except WorkflowUpdateFailedError as err:
        raise UserError(f"decision rejected: {getattr(err.cause, 'message', err.cause)}") from None
    verdict = "denied" if args.deny else "approved"
    print(f"{verdict}: {pending.tool} call {pending.call_id} of {args.id}")
    return 0


async def cmd_interject(args: argparse.Namespace) -> int:
    client = await connect()
    desc = await describe(client, args.id)
    if desc.status != WorkflowExecutionStatus.RUNNING:
        raise UserError(f"task {args.id} is not running")
    if len(args.text.encode()) > MAX_INTERJECTION:
        raise UserError(f"the message is {len(args.text.encode()):,} bytes; the limit is {MAX_INTERJECTION:,}: "
                        "save it in a file in the workspace and point the task at it")
    text = SecretStore.from_env().redact(args.text)
    await client.get_workflow_handle(args.id).signal(
        AgentTaskWorkflow.interject, Interjection(text=text, sent_by=who())
    )
    print(f"message delivered to {args.id}")
    return 0


async def cmd_list(args: argparse.Namespace) -> int:
    client = await connect()
    query = f"WorkflowType = '{TASK_WORKFLOW}'"
    if args.waiting:
        query += " AND AgentState IN ('WAITING_APPROVAL', 'WAITING_REPLY') AND ExecutionStatus = 'Running'"
    rows = 0
    async for wf in client.list_workflows(query, limit=args.limit):
        started = wf.start_time.strftime("%Y-%m-%d %H:%M:%S") if wf.start_time else "-"
        status = wf.status.name if wf.status else "-"
        state = wf.typed_search_attributes.get(AGENT_STATE) or "-"
        print(f"{wf.id:<50} {status:<10} {state:<17} {started}")
        rows += 1
    if rows == 0:
        print("no tasks waiting for a person" if args.waiting else "no tasks yet")
    return 0


# ---- entry -----------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="starter.py", description="Durable agent tasks on Temporal.")
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text in (("run", "start a task and follow it to the end"), ("start", "start a task and print its id")):
        s = sub.add_parser(name, help=help_text)
        s.add_argument("task", help="the instruction")
        add_task_options(s)
        if name == "run":
            s.add_argument("--demo", action="store_true", help="use the offline scripted demo model")
    s = sub.add_parser("status", help="show a task's state")
    s.add_argument("id")
    s.add_argument("--json", action="store_true")
    s = sub.add_parser("watch", help="follow a task")
    s.add_argument("id")
    s.add_argument("--json", action="store_true", help="one JSON event per line (see README)")
    s = sub.add_parser("stop", help="stop a task (it ends as FAILED, stopped)")
    s.add_argument("id")
    s.add_argument("--reason", default="stopped by user")
    s = sub.add_parser("approve", help="approve (or --deny) the pending tool call")
    s.add_argument("id")
    s.add_argument("--deny", action="store_true")
    s.add_argument("--reason", default="")
    s.add_argument("--call", help="the pending call's id, when it matters which")
    s.add_argument("--signal", action="store_true", help="send as a signal, without confirmation")
    for name in ("interject", "reply"):
        s = sub.add_parser(name, help="send the task a message (cuts off what is running)")
        s.add_argument("id")
        s.add_argument("text")
    s = sub.add_parser("list", help="list tasks")
    s.add_argument("--limit", type=int, default=50)
    s.add_argument("--waiting", action="store_true", help="only tasks waiting for a person")
    cli.schedule.register(sub)
    return p


COMMANDS = {
    "run": cmd_run, "start": cmd_start, "status": cmd_status,
    "watch": cmd_watch, "stop": cmd_stop, "list": cmd_list,
    "approve": cmd_approve, "interject": cmd_interject, "reply": cmd_interject,
    "schedule": cli.schedule.cmd_schedule,
}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    configure_logging(os.environ.get("AGENT_LOG_LEVEL", "WARNING"))
    try:
        return asyncio.run(COMMANDS[args.command](args))
    except (UserError, TemporalUnavailable, ServerError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    code = main()
    shutdown_tracing()  # flush spans: os._exit below skips atexit
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter finalization: the SDK's native runtime threads can race it and abort.
    os._exit(code)
