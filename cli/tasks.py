"""Starting tasks from the command line: what a task input is made of, and the small
Temporal look-ups the commands share. Errors a user can cause are ``UserError``: the CLI
prints them as one line."""

from __future__ import annotations

import argparse
import getpass
import os
import re
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import CancelledError, TerminatedError
from temporalio.exceptions import TimeoutError as WorkflowTimeout
from temporalio.service import RPCError, RPCStatusCode

from contracts.task import DEFAULT_TOOLS, ApprovalMode, ModelRef, TaskInput, TaskOutcome, TaskState
from providers.factory import MODES
from runtime.secrets import SecretStore
from temporal.client import ensure_search_attributes, ui_base_url
from workflows.policy import failed_outcome
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
        return [*DEFAULT_TOOLS, "search"]
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
        continue_as_new_after=getattr(args, "continue_as_new_after", TaskInput.model_fields["continue_as_new_after"].default),
        tools=default_tools(),
        approval=ApprovalMode(args.approval),
        approval_timeout_s=args.approval_timeout,
        session=args.session,
        network=bool(getattr(args, "network", False)),
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
        return failed_outcome(err) or closing_outcome(err)


def closing_outcome(err: WorkflowFailureError) -> TaskOutcome:
    """The outcome of a workflow that ended without one of its own: cancelled, terminated or
    timed out by Temporal (or failed by something other than the task)."""
    cause = err.cause
    if isinstance(cause, CancelledError):
        return TaskOutcome(status=TaskState.CANCELLED, error="cancelled: a cancellation was requested")
    if isinstance(cause, TerminatedError):
        return TaskOutcome(status=TaskState.TERMINATED, error=f"terminated: {cause.message or 'no reason given'}")
    if isinstance(cause, WorkflowTimeout):
        return TaskOutcome(status=TaskState.TIMED_OUT, error="timed out: the workflow's execution timeout passed")
    return TaskOutcome(status=TaskState.FAILED, error=f"workflow failed: {cause}")
