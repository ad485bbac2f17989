"""A worker process for the task queue: `python worker.py`.

Runs the task workflow and the LLM and tool activities. The composition root: it reads
this process's environment once (``load_settings``, see README) and hands each
service its settings.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import sys
import uuid
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.runtime import Runtime
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxRestrictions

from activities import metrics as activity_metrics
from activities.attachments import AttachmentActivities
from activities.llm import LlmActivities
from activities.mcp import McpActivities, McpCatalog, McpToolRunner, ToolsSource
from activities.mcp_sessions import McpSessions, load_worker_config
from activities.model_view import ContextSource
from activities.prompt import PromptActivities
from activities.session import SessionActivities
from activities.tools import ToolActivities
from contracts.activities import CONTEXT_QUERY, ContextPage
from contracts.mcp import MCP_TOOLS_QUERY, McpServerConfig, McpTool
from contracts.task import DEFAULT_TASK_QUEUE
from core.settings import EgressSettings, ProviderSettings, TemporalSettings
from providers.keys import missing_key
from providers.model_table import load_models
from runtime.audit import AuditLog, default_audit_path
from runtime.logs import configure_logging, get_logger
from runtime.paths import data_dir
from runtime.processes import flush_quietly, supervise
from runtime.secrets import SecretStore
from runtime.settings import Settings, load_settings
from runtime.store import ContextStore, Store, StoreUnavailable, as_store, open_store
from temporal.client import TemporalUnavailable, connect
from temporal.connection import add_options as add_connection_options
from temporal.connection import given, resolve
from temporal.metrics import approvals_waiting, declare, metrics_runtime
from temporal.sandbox import LeanSandboxedWorkflowRunner
from temporal.server import ServerError
from temporal.tracing import shutdown_tracing
from tools import egress, sandbox
from tools.browser import BrowserPool, chromium_problem
from tools.shell_network import CommandEgress
from workflows import metrics as workflow_metrics
from workflows.task import AgentTaskWorkflow

LIVE_HEARTBEAT = timedelta(seconds=0.1)
STICKY_WAIT = timedelta(seconds=5)


def connected_settings(connection: Mapping[str, str] | None = None) -> Settings:
    """This process's settings, the ``connection`` options (--address, --namespace, --profile)
    over them: read once, here (ValueError naming a bad variable or profile, or a prices or
    models file the worker could not use)."""
    settings = load_settings()
    load_models(settings.models)  # a bad prices or models file stops the worker here, in one line
    return dataclasses.replace(settings, temporal=resolve(settings.temporal, dict(connection or {})))


def task_queue(settings: TemporalSettings) -> str:
    """``AGENT_TASK_QUEUE`` or the default."""
    return settings.task_queue or DEFAULT_TASK_QUEUE


def worker_mcp_servers(settings: Settings) -> dict[str, McpServerConfig]:
    """The servers of ``AGENT_MCP_CONFIG``, for every task (ValueError when it cannot be used)."""
    return load_worker_config(settings.mcp.config)


def check_egress(settings: EgressSettings) -> None:
    """ValueError naming an ``AGENT_DENY_HOSTS`` or ``AGENT_NETWORK_ALLOW`` entry that is not
    one (tools take their settings from their ``ToolContext``; these are checked before
    anything runs)."""
    egress.deny_list(settings.deny_hosts)
    egress.allow_list(settings.network_allow)


# Our own packages are deterministic by construction (workflows/ does no I/O, reads no clock;
# the before-stop check greps for it), so the sandbox may share them instead of re-executing
# them for every workflow instance, which dominated the worker's CPU with many short tasks.
SANDBOX_RESTRICTIONS = SandboxRestrictions.default.with_passthrough_modules(
    "core", "contracts", "workflows", "activities", "providers", "tools", "prompts", "temporal", "runtime",
    "pydantic", "structlog", "httpx",
)
# The SDK's sandbox, looking up payload serialization contexts without re-entering it
# (temporal/sandbox.py says why: it was the largest part of the worker's CPU per turn).
WORKFLOW_RUNNER = LeanSandboxedWorkflowRunner(restrictions=SANDBOX_RESTRICTIONS)


def workflow_context(client: Client) -> ContextSource:
    """How a worker reads entries its store lacks: the ``model_context`` query of the task's run."""

    async def fetch(workflow_id: str, run_id: str | None, after_seq: int) -> ContextPage:
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        return await handle.query(CONTEXT_QUERY, after_seq, result_type=ContextPage)

    return fetch


def workflow_mcp_tools(client: Client) -> ToolsSource:
    """How a worker reads the MCP tools a task listed on another worker: its ``mcp_tools`` query."""

    async def fetch(workflow_id: str, run_id: str | None) -> list[McpTool]:
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        return await handle.query(MCP_TOOLS_QUERY, result_type=list[McpTool])

    return fetch


def build_worker(
    client: Client,
    *,
    queue: str | None = None,
    settings: ProviderSettings | None = None,
    max_concurrent_activities: int = 200,
    store: Store | ContextStore | None = None,
    shutdown_grace: timedelta = timedelta(0),
    local_tools: bool | None = None,
    config: Settings,
) -> AgentWorker:
    # The composition root: stores, secrets and settings are built once here and injected.
    check_egress(config.egress)
    store = as_store(store) if store is not None else open_store(config.store, config.paths)
    secrets = SecretStore.from_settings(config.secrets)
    settings = config.providers if settings is None else settings
    shared = queue or task_queue(config.temporal)
    # Temporal's own form (pid@host), made unique: it is in every event a worker completes,
    # and with the queue name below in every activity a task schedules, so it is kept short.
    identity = f"{os.getpid()}@{socket.gethostname()}.{uuid.uuid4().hex[:4]}"
    own = f"{shared}@{identity}"  # this worker alone: a task's later calls prefer it (warm cache)
    # MCP servers: started on first use, shared by every task this worker serves, stopped with it.
    mcp = McpSessions(secrets, worker_mcp_servers(config), log_dir=data_dir(config.paths) / "mcp", egress=config.egress)
    browsers = BrowserPool(config.browser)  # Chromium starts on the first browser call
    commands_out = CommandEgress(config.egress)  # shell commands' one way out: listens from the first
    catalog = McpCatalog(workflow_mcp_tools(client))
    if local_tools is None:  # reads as local activities unless AGENT_LOCAL_TOOLS=0
        local_tools = config.worker.local_tools
    llm = LlmActivities(settings, store, secrets, history=workflow_context(client), own_queue=own, mcp=catalog,
                        local_tools=local_tools, tables=config.models)
    audit = AuditLog(default_audit_path(config.paths), secrets)
    tools = ToolActivities(store, secrets, config, audit, mcp=McpToolRunner(mcp), browsers=browsers,
                           command_egress=commands_out)
    mcp_listing = McpActivities(mcp, catalog)
    sessions = SessionActivities(store)
    prompt = PromptActivities(store, secrets, config)
    activities = [llm.call_llm, tools.run_tool, tools.redact_text, tools.close_browser, sessions.load_session,
                  sessions.record_session, prompt.prompt_context, mcp_listing.list_tools,
                  AttachmentActivities(store).save_attachments]
    options: dict[str, Any] = dict(
        max_concurrent_activities=max_concurrent_activities,
        # Heartbeats carry cancellation (stop, interjection) to running activities, and the
        # model's live text to watchers on any host: send them promptly instead of the
        # default 80% of the heartbeat timeout. Tools beat once a second; a streaming model
        # call up to every LIVE_HEARTBEAT_S.
        max_heartbeat_throttle_interval=LIVE_HEARTBEAT,
        # On shutdown, running activities get this long to finish before they are cancelled
        # (a cancelled command is killed; a retry reports it as interrupted, never reruns it).
        graceful_shutdown_timeout=shutdown_grace,
        identity=identity,
    )
    # A task this worker ran stays pinned to it: if it dies, Temporal holds the task's next
    # workflow task and queries this long before any worker may take them (the SDK's default
    # is 10 s; the CLI also unpins a task it gets no answer for: cli/workers.py).
    shared_options = dict(options, sticky_queue_schedule_to_start_timeout=STICKY_WAIT)
    return AgentWorker(
        Worker(client, task_queue=shared, workflows=[AgentTaskWorkflow], workflow_runner=WORKFLOW_RUNNER,
               activities=activities, **shared_options),
        Worker(client, task_queue=own, activities=activities, **options),
        mcp,
        browsers,
        commands_out,
    )


class AgentWorker:
    """The worker on the shared task queue (workflows and activities), and beside it one on
    this worker's own queue (activities only), which the calls of a task it has served go to
    first: Temporal's worker-specific task queues, for a warm context cache."""

    def __init__(
        self, shared: Worker, own: Worker, mcp: McpSessions, browsers: BrowserPool, commands_out: CommandEgress
    ) -> None:
        self.shared, self.own, self.mcp, self.browsers = shared, own, mcp, browsers
        self.commands_out = commands_out

    async def run(self) -> None:
        try:
            await asyncio.gather(self.shared.run(), self.own.run())
        finally:
            await self._stop_mcp()

    async def _stop_mcp(self) -> None:
        """Stop this worker's MCP servers, its browser and its commands' proxy, once nothing runs
        that could use them."""
        try:
            await self.mcp.close()
        finally:
            self.commands_out.close()
            await self.browsers.close_all()

    async def shutdown(self) -> None:
        await asyncio.gather(self.shared.shutdown(), self.own.shutdown())

    async def __aenter__(self) -> AgentWorker:
        await self.shared.__aenter__()
        await self.own.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self.own.__aexit__(*exc)
            await self.shared.__aexit__(*exc)
        finally:
            await self._stop_mcp()


async def _start(config: Settings, runtime: Runtime | None = None) -> tuple[sandbox.SandboxStatus, Store, Client]:
    """What every worker process checks at start, each failure one line (see ``preflight``)."""
    configure_logging("INFO", secrets=SecretStore.from_settings(config.secrets))
    box = sandbox.status(config.sandbox)  # AGENT_SANDBOX=required without bubblewrap refuses to start
    check_egress(config.egress)
    worker_mcp_servers(config)  # a bad AGENT_MCP_CONFIG refuses to start, in one line
    store = open_store(config.store, config.paths)  # checked before anything else: a bad store refuses to start
    try:
        await store.check()
        return box, store, await connect(config, runtime=runtime)
    except BaseException:
        await store.close()
        raise


async def preflight(connection: Mapping[str, str] | None = None) -> int:
    """The checks every worker process makes at start, made once by a supervisor before it
    starts its processes: a bad configuration is one line, not one per process."""
    try:
        _box, store, _client = await _start(connected_settings(connection))
        await store.close()
    except (TemporalUnavailable, ServerError, StoreUnavailable, sandbox.SandboxUnavailable, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


async def main(stop_requested: list[int] | None = None, index: int = 0,
               connection: Mapping[str, str] | None = None) -> int:
    """One worker process. ``stop_requested``: signals that arrived before the worker could
    handle them (a supervised child starting up), acted on as soon as it can. ``index``: its
    place among a supervisor's processes (its metrics port is ``AGENT_METRICS_PORT + index``)."""
    try:
        config = connected_settings(connection)
        port = config.worker.metrics_port
        runtime = metrics_runtime(port + index, config.worker.metrics_host) if port else None
        box, store, client = await _start(config, runtime)
    except (TemporalUnavailable, ServerError, StoreUnavailable, sandbox.SandboxUnavailable, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    log = get_logger(component="worker")
    if not box.active:
        print(box.notice(), file=sys.stderr)
    if problem := chromium_problem(config.browser):  # only the browser tools are missing
        print(problem, file=sys.stderr)
    if problem := missing_key(config.task.provider, config.providers):  # said now, not as a 401 on the first call
        print(f"{problem}; tasks on that provider will fail", file=sys.stderr)
    grace = timedelta(seconds=config.worker.shutdown_grace_s)
    worker = build_worker(client, store=store, shutdown_grace=grace, config=config)
    loop = asyncio.get_running_loop()
    stopping: list[asyncio.Future[None]] = []

    def stop(signame: str) -> None:
        # The stop is recorded (or the process ended) before anything is logged: a log line
        # into a closed pipe must not swallow the signal.
        if stopping:  # a second signal: stop waiting (commands die with the process)
            with contextlib.suppress(Exception):
                log.warning("second signal: exiting now; cut-off tool calls are reported as interrupted",
                            signal=signame)
            flush_quietly()
            os._exit(130)
        stopping.append(asyncio.ensure_future(worker.shutdown()))
        with contextlib.suppress(Exception):
            log.info("worker stopping: new work is no longer taken; running activities get time to finish",
                     signal=signame, grace_s=grace.total_seconds())

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop, signal.Signals(signum).name)
    for signum in stop_requested or ():
        stop(signal.Signals(signum).name)
    log.info("worker started", task_queue=task_queue(config.temporal), sandbox=box.notice())
    gauge = None
    if runtime is not None:
        declare(runtime, workflow_metrics.COUNTERS + activity_metrics.COUNTERS, task_queue(config.temporal))
        gauge = asyncio.ensure_future(approvals_waiting(client, runtime, task_queue(config.temporal)))
    await worker.run()
    if gauge is not None:
        gauge.cancel()
    if stopping:
        await stopping[0]
    await store.close()
    log.info("worker stopped")
    shutdown_tracing()
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="worker.py", description="A worker for the agent's task queue.")
    add_options(parser)
    add_connection_options(parser)  # `durable-agent worker` has them from starter.py, as every command
    return parser.parse_args(argv)


async def serve(options: argparse.Namespace) -> int:
    """``python worker.py`` and ``durable-agent worker``: one worker process, or a supervisor
    of ``--processes`` of them."""
    if options.metrics_port is not None:  # for this process and the ones it supervises
        os.environ["AGENT_METRICS_PORT"] = str(options.metrics_port)
    if options.task_queue is not None:
        os.environ["AGENT_TASK_QUEUE"] = options.task_queue
    if options.processes > 1:
        return await preflight(given(options)) or supervise(
            options.processes, given(options), module="worker", cwd=Path(__file__).resolve().parent)
    return await main(connection=given(options))


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="worker processes, each with its own event loop, sharing the store "
                             "(default: the number of cores)")
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="serve Prometheus metrics on this port, the Nth process on PORT+N "
                             "(default: $AGENT_METRICS_PORT, else none)")
    parser.add_argument("--task-queue", metavar="QUEUE",
                        help="the task queue to serve (default: $AGENT_TASK_QUEUE, else agent-tasks)")


def run_child(stop_requested: list[int], index: int) -> None:
    """A supervised worker process (``supervise`` starts it), the ``index``-th."""
    try:
        code = asyncio.run(main(stop_requested, index, given(parse_args(sys.argv[2:]))))
    except KeyboardInterrupt:
        code = 130
    flush_quietly()
    os._exit(code)


if __name__ == "__main__":
    try:
        code = asyncio.run(serve(parse_args(sys.argv[1:])))
    except KeyboardInterrupt:
        code = 130
    flush_quietly()
    # Skip interpreter finalization: the SDK's native runtime threads can race it and abort
    # ("Fatal Python error: PyGILState_Release"); everything is flushed and closed by now.
    os._exit(code)
