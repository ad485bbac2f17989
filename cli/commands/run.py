"""``run TASK``: start a task and follow it to the end; exit 0 on DONE, 1 otherwise.

Ctrl-C leaves the task running (on the embedded default the background worker runs it on),
except with ``--demo``: the demo's scripted model and worker live in this process, so the
demo task ends with it (terminated, with the reason), on Ctrl-C, SIGTERM or a closed terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
import uuid
from contextlib import AsyncExitStack

from temporalio.client import Client
from temporalio.service import RPCError

from activities.llm import ProviderSettings
from cli.background import connect
from cli.local import local_worker, make_follower
from cli.options import add_task_options
from cli.render import make_console
from cli.tasks import closed_outcome, configured_model, start_task, task_input, ui_link
from cli.workers import unpolled_notice
from contracts.task import TaskState
from worker import task_queue

DEMO_ENDED = "the demo ended with its terminal: its scripted model ran in the `run --demo` process"


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("run", help="start a task and follow it to the end")
    s.add_argument("task", help="the instruction")
    add_task_options(s)
    s.add_argument("--demo", action="store_true",
                   help="use the offline scripted demo model; it runs in this process, so the demo task ends "
                   "with it (Ctrl-C or a closed terminal terminates it)")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    console = make_console()
    model = "demo-scripted" if args.demo else configured_model(args)
    inp = task_input(args, model)
    if args.demo:  # the scripted demo model speaks the OpenAI wire, and nothing to fail over to
        inp = inp.model_copy(update={"provider": "openai", "fallbacks": []})
    client = await connect(args.settings)
    ended_by: list[signal.Signals] = []
    async with AsyncExitStack() as stack:
        queue = task_queue(args.settings.temporal)
        if args.demo:
            from fakes.scripted import ScriptedModelServer, demo_steps

            server = stack.enter_context(ScriptedModelServer(demo_steps(inp.instruction)))
            settings = ProviderSettings(openai_base_url=server.url, openai_api_key=None)
            queue = f"agent-demo-{uuid.uuid4().hex[:8]}"  # only this process's worker serves it
            await local_worker(stack, client, queue, settings)
            _end_on_hangup(ended_by)
        elif notice := await unpolled_notice(client, queue, args.settings.temporal):
            print(notice, file=sys.stderr)
        started = time.monotonic()
        workflow_id = await start_task(client, inp, queue)
        console.print(f"[dim]task {workflow_id} · {ui_link(client, workflow_id, args.settings.temporal)}[/]")
        try:
            outcome = await make_follower(client, workflow_id).run(lambda: closed_outcome(client, workflow_id), started)
        except BaseException as err:  # the demo task ends with this process, however it ends
            if args.demo:
                await asyncio.shield(_end_demo(client, workflow_id))
            if not isinstance(err, (KeyboardInterrupt, asyncio.CancelledError)):
                raise
            if args.demo:
                line = f"\ntask {workflow_id} ended: {DEMO_ENDED}"
            else:
                line = f"\ntask {workflow_id} goes on; follow it with: python starter.py watch {workflow_id}"
            with contextlib.suppress(OSError):  # the terminal may be gone
                console.print(line)
            if ended_by:
                return 128 + ended_by[0]
            raise
        return 0 if outcome.status == TaskState.DONE else 1


def _end_on_hangup(ended_by: list[signal.Signals]) -> None:
    """SIGHUP (the terminal closed) and SIGTERM end the demo as Ctrl-C does."""
    task, loop = asyncio.current_task(), asyncio.get_running_loop()
    assert task is not None

    def end(signum: signal.Signals) -> None:
        ended_by.append(signum)
        task.cancel()

    for signum in (signal.SIGHUP, signal.SIGTERM):
        loop.add_signal_handler(signum, end, signum)


async def _end_demo(client: Client, workflow_id: str) -> None:
    with contextlib.suppress(RPCError):  # it ended meanwhile
        await client.get_workflow_handle(workflow_id).terminate(reason=DEMO_ENDED)
