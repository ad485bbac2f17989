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

from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowQueryFailedError,
)
from temporalio.exceptions import CancelledError, TerminatedError
from temporalio.exceptions import TimeoutError as WorkflowTimeout
from temporalio.service import RPCError, RPCStatusCode

from cli.permissions import load_permissions
from cli.tool_selection import SelectionError, tool_fields
from cli.workers import ANSWER_WAIT, queue_polled
from contracts.task import ApprovalMode, ModelRef, TaskInput, TaskOutcome, TaskState, TaskStatus
from contracts.toolset import DEFAULT_TOOLS
from core.markdown import code_span
from core.permissions import Permissions
from core.settings import ModelTableSettings, SearchSettings, TaskDefaults, TemporalSettings
from providers.factory import MODES
from providers.keys import missing_key
from providers.model_table import context_window, load_models
from runtime.paths import data_dir
from runtime.secrets import SecretStore
from temporal.client import ensure_search_attributes, is_embedded, ui_base_url
from tools.search import search_configured
from workflows.policy import failed_outcome
from workflows.search_attributes import initial_search_attributes
from workflows.task import AgentTaskWorkflow

QUERY_TIMEOUT = timedelta(seconds=5)
# Temporal refuses payloads over 2 MB: a longer instruction is handed over as a file.
MAX_INLINE_INSTRUCTION = 64 * 1024
MAX_INTERJECTION = 64 * 1024
CLOSED_BY_TEMPORAL = (TaskState.CANCELLED, TaskState.TERMINATED, TaskState.TIMED_OUT)  # no outcome of the task's


class UserError(Exception):
    """An error the user caused: printed as one line, no traceback."""


# ---- helpers -------------------------------------------------------------------


def workflow_id_for(instruction: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", instruction.lower()).strip("-")[:32].rstrip("-") or "task"
    return f"task-{slug}-{uuid.uuid4().hex[:6]}"


def instruction_text(text: str, workspace: Path, secrets: SecretStore) -> str:
    """The instruction as the task receives it: secrets redacted, and if it is too long to
    travel in a workflow input, saved in the workspace with a short pointer instead. An empty
    one, or one with bytes that are not UTF-8 (a terminal in another encoding), is refused."""
    if not text.strip():
        raise UserError("the task is empty: say what the agent should do")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:  # argv's undecodable bytes arrive as lone surrogates
        char = ord(text[err.start])
        byte = f"byte {char - 0xDC00:#04x}" if 0xDC80 <= char <= 0xDCFF else f"character U+{char:04X}"
        raise UserError(f"the task text is not valid UTF-8 ({byte} at position {err.start}): set the terminal "
                        "to UTF-8, or put the text in a UTF-8 file") from None
    text = secrets.redact(text)
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


def default_tools(search: SearchSettings) -> list[str] | None:
    """The engine's default tools, plus web search when a search backend is configured."""
    if search_configured(search):
        return [*DEFAULT_TOOLS, "search"]
    return None


def workspace_of(args: argparse.Namespace) -> Path:
    """The task's workspace: ``--workspace``, or the current directory."""
    workspace = Path(args.workspace or os.getcwd()).expanduser().resolve()
    if not workspace.is_dir():
        raise UserError(f"workspace {workspace} is not a directory")
    check_workspace(workspace, data_dir(args.settings.paths))
    return workspace


def check_workspace(workspace: Path, data: Path) -> None:
    """Refuse a workspace (resolved) that would put the whole host, or the agent's own data
    (its store, audit log, checkpoints, tokens), in a task's writable reach."""
    if workspace == Path(workspace.anchor):
        raise UserError(f"workspace {workspace} is the root of the file system: give a project directory")
    data = data.resolve()
    if workspace.is_relative_to(data):
        raise UserError(f"workspace {workspace} is inside the agent's data directory {data}: give a project directory")


def task_input(args: argparse.Namespace, model: str) -> TaskInput:
    workspace = workspace_of(args)
    settings = args.settings  # starter.py's
    return TaskInput(
        instruction=instruction_text(args.task, workspace, SecretStore.from_settings(settings.secrets)),
        workspace=str(workspace),
        model=model,
        provider=provider_mode(args),
        max_iterations=args.max_iterations,
        fallbacks=fallback_chain(getattr(args, "fallback", None) or task_defaults(args).fallback),
        cost_limit_usd=getattr(args, "cost_limit", None),
        failover_after=getattr(args, "failover_after", 3),
        continue_as_new_after=getattr(args, "continue_as_new_after", TaskInput.model_fields["continue_as_new_after"].default),
        **selected_tools(args),
        approval=ApprovalMode(args.approval),
        approval_timeout_s=args.approval_timeout,
        session=args.session,
        network=bool(getattr(args, "network", False)),
        stream=streaming(args),
        thinking_budget=getattr(args, "thinking_budget", None),
        context_window=getattr(args, "context_window", None) or model_window(model, settings.models),
        provider_wait_s=getattr(args, "provider_wait", TaskInput.model_fields["provider_wait_s"].default),
        permissions=standing_rules(args, workspace),
        verify=getattr(args, "verify", "auto"),
        max_parallel=getattr(args, "parallel", TaskInput.model_fields["max_parallel"].default),
    )


def standing_rules(args: argparse.Namespace, workspace: Path) -> Permissions:
    try:
        return load_permissions(getattr(args, "permissions", None), workspace)
    except ValueError as err:
        raise UserError(str(err)) from None


def selected_tools(args: argparse.Namespace) -> dict:
    """The task's tools and MCP servers (cli/tool_selection.py)."""
    try:
        return tool_fields(args, default_tools(args.settings.search))
    except SelectionError as err:
        raise UserError(str(err)) from None


def model_window(model: str, tables: ModelTableSettings) -> int:
    try:
        return context_window(model, load_models(tables))
    except ValueError as err:  # a bad AGENT_MODELS_FILE
        raise UserError(str(err)) from None


def task_defaults(args: argparse.Namespace) -> TaskDefaults:
    """What a task starts with when its options do not say (the settings starter.py read)."""
    return args.settings.task


def streaming(args: argparse.Namespace) -> bool:
    """Whether the model streams its answers: yes, unless --no-stream or AGENT_STREAM=0
    (also false, no, off)."""
    if getattr(args, "no_stream", False):
        return False
    return task_defaults(args).stream


def provider_mode(args: argparse.Namespace) -> str:
    mode = getattr(args, "provider", None) or task_defaults(args).provider
    if mode not in MODES:
        raise UserError(f"unknown provider {mode!r}: AGENT_PROVIDER is one of {', '.join(MODES)}")
    return mode


def configured_model(args: argparse.Namespace) -> str:
    model = getattr(args, "model", None) or task_defaults(args).model
    if not model:
        raise UserError(
            "no model configured: set AGENT_MODEL (and OPENAI_BASE_URL, OPENAI_API_KEY), "
            "or try the offline scripted model with --demo"
        )
    # On the embedded default the worker is started from this environment: a key missing here is
    # missing there. On a cluster the keys are the workers', not this command's.
    if args.settings.temporal.embedded and (problem := missing_key(provider_mode(args), args.settings.providers)):
        raise UserError(problem)
    return model


def ui_link(client: Client, workflow_id: str, temporal: TemporalSettings) -> str:
    return f"{ui_base_url(temporal)}/namespaces/{client.namespace}/workflows/{workflow_id}"


def who() -> str:
    try:
        return f"{getpass.getuser()} (cli)"
    except Exception:  # no user name in this environment
        return "cli"


async def start_task(client: Client, inp: TaskInput, queue: str, temporal: TemporalSettings, *,
                     conversation: bool = False) -> str:
    """Start the task; its workflow id. ``conversation``: a task with no session gets one named
    after itself, so it can be continued later (``run --resume ID``, cli/conversation.py)."""
    inp.search_attributes = await ensure_search_attributes(client, register=is_embedded(temporal))
    workflow_id = workflow_id_for(inp.instruction)
    if conversation and inp.session is None:
        inp.session = workflow_id
    await client.start_workflow(
        AgentTaskWorkflow.run,
        inp,
        id=workflow_id,
        task_queue=queue,
        memo={"instruction": inp.instruction[:2000], "workspace": inp.workspace, "model": inp.model},
        static_summary=code_span(inp.instruction[:200]),  # the UI renders Markdown: shown as typed
        # Set at start, so the workflow's first upsert is its first change.
        search_attributes=initial_search_attributes(inp.model, inp.session) if inp.search_attributes else None,
    )
    return workflow_id


async def describe(client: Client, workflow_id: str):
    try:
        return await client.get_workflow_handle(workflow_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise UserError(f"no task with id {workflow_id}") from None
        raise


async def running(client: Client, workflow_id: str):
    """The task's description, when it is running; a UserError saying how it is otherwise."""
    desc = await describe(client, workflow_id)
    if desc.status != WorkflowExecutionStatus.RUNNING:
        state = desc.status.name.lower() if desc.status else "unknown"
        raise UserError(f"task {workflow_id} is not running ({state})")
    return desc


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


# ---- a finished task ------------------------------------------------------------------


async def finished_status(client: Client, desc: WorkflowExecutionDescription, outcome: TaskOutcome) -> TaskStatus:
    """A closed task's last state. Its outcome says how it ended (turns, usage, cost, final
    text or error) and its input what it was (model, provider, approval mode, session,
    depth); a worker polling its queue replays it for the rest (the plan, the entries, and
    for a task cancelled, terminated or timed out by Temporal, which leaves no outcome of its
    own, its turns, tokens and cost)."""
    status = TaskStatus(state=outcome.status, turn=outcome.turns)
    if await queue_polled(client, desc.task_queue):
        try:
            status = await client.get_workflow_handle(desc.id, run_id=desc.run_id).query(
                AgentTaskWorkflow.status, rpc_timeout=ANSWER_WAIT
            )
        except (RPCError, WorkflowQueryFailedError):
            pass
    if not status.model:
        inp = await started_input(client, desc)
        if inp is not None:
            status = status.model_copy(update={
                "model": inp.model, "provider": inp.provider, "approval": inp.approval,
                "session": inp.session, "depth": inp.depth,
            })
        else:
            status = status.model_copy(update={"model": await memo_model(desc)})
    ended = {"state": outcome.status, "error": outcome.error, "pending_approval": None, "question": None}
    if outcome.status not in CLOSED_BY_TEMPORAL:  # the task's own outcome: its last word on what it did
        ended.update(turn=outcome.turns, usage=outcome.usage, cost_usd=outcome.cost_usd, run=outcome.runs,
                     final_text=outcome.final_text or None)
    return status.model_copy(update=ended)


async def started_input(client: Client, desc: WorkflowExecution) -> TaskInput | None:
    """The input the task's last run started with (the first event of its history)."""
    handle = client.get_workflow_handle(desc.id, run_id=desc.run_id)
    try:
        async for event in handle.fetch_history_events(page_size=1):
            payloads = list(event.workflow_execution_started_event_attributes.input.payloads)
            (inp,) = await client.data_converter.decode(payloads, [TaskInput])
            return inp if isinstance(inp, TaskInput) else None
    except (RPCError, ValueError, TypeError):
        return None
    return None
