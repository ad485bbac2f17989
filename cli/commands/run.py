"""``run TASK``: start a task and follow it to the end; exit 0 on DONE, 1 otherwise."""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from contextlib import AsyncExitStack

from activities.llm import ProviderSettings
from cli.local import local_worker, make_follower
from cli.options import add_task_options
from cli.render import make_console
from cli.tasks import closed_outcome, configured_model, start_task, task_input, ui_link
from contracts.task import TaskState
from temporal.client import connect, is_embedded
from worker import task_queue


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("run", help="start a task and follow it to the end")
    s.add_argument("task", help="the instruction")
    add_task_options(s)
    s.add_argument("--demo", action="store_true", help="use the offline scripted demo model")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    console = make_console()
    model = "demo-scripted" if args.demo else configured_model(args)
    inp = task_input(args, model)
    if args.demo:  # the scripted demo model speaks the OpenAI wire, and nothing to fail over to
        inp = inp.model_copy(update={"provider": "openai", "fallbacks": []})
    client = await connect(args.settings)
    async with AsyncExitStack() as stack:
        queue, settings = task_queue(args.settings.temporal), None
        if args.demo:
            from fakes.scripted import ScriptedModelServer, demo_steps

            server = stack.enter_context(ScriptedModelServer(demo_steps(inp.instruction)))
            settings = ProviderSettings(openai_base_url=server.url, openai_api_key=None)
            queue = f"agent-demo-{uuid.uuid4().hex[:8]}"  # only this process's worker serves it
        if args.demo or is_embedded(args.settings.temporal):
            await local_worker(stack, client, queue, settings, args.settings)
        started = time.monotonic()
        workflow_id = await start_task(client, inp, queue, args.settings.temporal)
        console.print(f"[dim]task {workflow_id} · {ui_link(client, workflow_id, args.settings.temporal)}[/]")
        try:
            outcome = await make_follower(client, workflow_id, args.settings).run(lambda: closed_outcome(client, workflow_id), started)
        except (KeyboardInterrupt, asyncio.CancelledError):
            console.print(f"\ntask {workflow_id} goes on; follow it with: python starter.py watch {workflow_id}")
            raise
        return 0 if outcome.status == TaskState.DONE else 1
