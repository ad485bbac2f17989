"""A worker process for the task queue: `python worker.py`.

Runs the task workflow and the LLM and tool activities. The composition root: it reads
this process's environment once (``load_settings``, see docs/settings.md), builds the services the
activities share (``TaskServices``) and hands them to the activities of its plugin
(``task_plugin``: temporal/plugin.py's ``AgentPlugin``, the one way a worker is built).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import socket
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.runtime import Runtime
from temporalio.worker import Worker

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
from runtime.processes import flush_quietly, routed_stops, supervise
from runtime.secrets import SecretStore
from runtime.settings import Settings, load_settings
from runtime.store import ContextStore, Store, StoreUnavailable, as_store, open_store
from temporal.client import TemporalUnavailable, connect
from temporal.connection import add_options as add_connection_options
from temporal.connection import given, resolve
from temporal.metrics import approvals_waiting, declare, metrics_runtime
from temporal.plugin import AgentPlugin
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


@dataclass
class TaskServices:
    """What the task activities share, built once per worker and injected into them; closed
    with the worker (``AgentWorker``)."""

    store: Store
    secrets: SecretStore
    mcp: McpSessions  # MCP servers: started on first use, shared by every task this worker serves
    browsers: BrowserPool  # Chromium starts on the first browser call
    commands_out: CommandEgress  # shell commands' one way out: listens from the first
    catalog: McpCatalog
    audit: AuditLog

    @classmethod
    def build(cls, client: Client, config: Settings, store: Store | ContextStore | None = None) -> TaskServices:
        check_egress(config.egress)
        store = as_store(store) if store is not None else open_store(config.store, config.paths)
        secrets = SecretStore.from_settings(config.secrets)
        mcp = McpSessions(secrets, worker_mcp_servers(config), log_dir=data_dir(config.paths) / "mcp",
                          egress=config.egress)
        return cls(store=store, secrets=secrets, mcp=mcp, browsers=BrowserPool(config.browser),
                   commands_out=CommandEgress(config.egress), catalog=McpCatalog(workflow_mcp_tools(client)),
                   audit=AuditLog(default_audit_path(config.paths), secrets))


def task_plugin(
    client: Client,
    services: TaskServices,
    config: Settings,
    *,
    own_queue: str,
    settings: ProviderSettings | None = None,
    local_tools: bool | None = None,
) -> AgentPlugin:
    """The task worker's plugin: ``AgentTaskWorkflow`` and every activity it calls, built from
    ``services`` (``tests/test_registration.py`` checks each activity a workflow names is here)."""
    settings = config.providers if settings is None else settings
    if local_tools is None:  # reads as local activities unless AGENT_LOCAL_TOOLS=0
        local_tools = config.worker.local_tools
    s = services
    llm = LlmActivities(settings, s.store, s.secrets, history=workflow_context(client), own_queue=own_queue,
                        mcp=s.catalog, local_tools=local_tools, tables=config.models)
    tools = ToolActivities(s.store, s.secrets, config, s.audit, mcp=McpToolRunner(s.mcp), browsers=s.browsers,
                           command_egress=s.commands_out)
    sessions = SessionActivities(s.store)
    activities = [llm.call_llm, tools.run_tool, tools.redact_text, tools.close_browser, sessions.load_session,
                  sessions.record_session, PromptActivities(s.store, s.secrets, config).prompt_context,
                  McpActivities(s.mcp, s.catalog).list_tools, AttachmentActivities(s.store).save_attachments]
    return AgentPlugin("tasks", workflows=[AgentTaskWorkflow], activities=activities, codec=config.codec)


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
    services = TaskServices.build(client, config, store)
    shared = queue or task_queue(config.temporal)
    # Temporal's own form (pid@host), made unique: it is in every event a worker completes,
    # and with the queue name below in every activity a task schedules, so it is kept short.
    identity = f"{os.getpid()}@{socket.gethostname()}.{uuid.uuid4().hex[:4]}"
    own = f"{shared}@{identity}"  # this worker alone: a task's later calls prefer it (warm cache)
    plugin = task_plugin(client, services, config, own_queue=own, settings=settings, local_tools=local_tools)
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
        Worker(client, task_queue=shared, plugins=[plugin], **shared_options),
        Worker(client, task_queue=own, plugins=[plugin.activities_only()], **options),
        services,
    )


class AgentWorker:
    """The worker on the shared task queue (workflows and activities), and beside it one on
    this worker's own queue (activities only), which the calls of a task it has served go to
    first: Temporal's worker-specific task queues, for a warm context cache."""

    def __init__(self, shared: Worker, own: Worker, services: TaskServices) -> None:
        self.shared, self.own, self.services = shared, own, services

    async def run(self) -> None:
        try:
            await asyncio.gather(self.shared.run(), self.own.run())
        finally:
            await self._stop_mcp()

    async def _stop_mcp(self) -> None:
        """Stop this worker's MCP servers, its browser and its commands' proxy, once nothing runs
        that could use them."""
        try:
            await self.services.mcp.close()
        finally:
            self.services.commands_out.close()
            await self.services.browsers.close_all()

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

    with routed_stops(loop, stop, stop_requested or []):
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
