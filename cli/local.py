"""What a command runs in its own process: a worker (``run --demo``, ``mcp-serve`` on the
embedded dev server or with ``--worker``) and a follower that shows a task on this terminal.
Other commands leave the running to the background worker (cli/background.py)."""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack

from temporalio.client import Client

from cli.ask import ask_person
from cli.follow import Follower
from cli.render import make_console
from cli.screen import ConsoleSink
from cli.sinks import JsonSink
from cli.tasks import UserError, who
from cli.usage import HistoryUsage
from contracts.task import TaskStatus
from core.settings import ProviderSettings, Settings
from runtime.secrets import SecretStore
from runtime.store import open_store
from tools import sandbox
from tools.browser import chromium_problem
from worker import build_worker, worker_mcp_servers


def make_follower(client: Client, workflow_id: str, settings: Settings, *, json_mode: bool = False,
                  verbose: bool = False) -> Follower:
    console = make_console()
    sink = (JsonSink(workflow_id, usage=HistoryUsage(client, workflow_id)) if json_mode
            else ConsoleSink(console, verbose=verbose))
    interactive = sys.stdin.isatty() and not json_mode
    secrets = SecretStore.from_settings(settings.secrets)
    followed = workflow_id

    async def ask(client: Client, workflow_id: str, status: TaskStatus, interactive: bool) -> None:
        if not json_mode:  # workflow_id: the task followed, or one of its sub-agents
            parent = followed if workflow_id != followed else None
            await ask_person(client, workflow_id, status, console, interactive, who(), parent, secrets,
                             settings.temporal)

    return Follower(client, workflow_id, sink, interactive=interactive, ask=ask, temporal=settings.temporal)


async def local_worker(stack: AsyncExitStack, client: Client, queue: str, settings: ProviderSettings | None,
                       config: Settings):
    try:
        box = sandbox.status(config.sandbox)
        worker_mcp_servers(config)  # a bad AGENT_MCP_CONFIG is one line, not a traceback
    except (sandbox.SandboxUnavailable, ValueError) as err:
        raise UserError(str(err)) from None
    if not box.active:
        print(box.notice(), file=sys.stderr)
    if browser := chromium_problem(config.browser):
        print(browser, file=sys.stderr)
    store = open_store(config.store, config.paths)
    await store.check()  # a store that cannot work is one line now, not a failed task later
    stack.push_async_callback(store.close)
    worker = build_worker(client, queue=queue, settings=settings, store=store, config=config)
    await stack.enter_async_context(worker)
