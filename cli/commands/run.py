"""``run TASK``: start a task and follow it; at a terminal, stay in its conversation
(cli/conversation.py). Without a terminal: exit 0 on DONE, 1 otherwise.

On the embedded default a background worker with this command's model settings runs the tasks
(cli/background.py), so a task left goes on. ``--demo`` is the exception: its scripted model and worker live in this
process, so the demo's tasks end with it (terminated, with the reason), however it ends:
leaving, Ctrl-C, SIGTERM or a closed terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import uuid
from contextlib import AsyncExitStack

from rich.console import Console
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from cli.background import connect, connect_serving
from cli.commands import start
from cli.conversation import Conversation, converse
from cli.local import local_worker
from cli.options import add_task_options
from cli.render import safe
from cli.resume import earlier_exchanges, picked_up
from cli.tasks import UserError, configured_model, task_input, workspace_of
from cli.workers import unpolled_notice
from contracts.task import ApprovalMode, TaskInput, TaskState
from core.settings import ProviderSettings
from workflows.task import AgentTaskWorkflow

FINAL = (TaskState.DONE, TaskState.FAILED, TaskState.CANCELLED)
FINISHING_S = 10.0
DEMO_ENDED = "the demo ended with its terminal: its scripted model ran in the `run --demo` process"


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("run", help="start a task and follow it; at a terminal, stay in its conversation")
    s.add_argument("task", nargs="?", help="the instruction (with --continue or --resume: the next one, optional)")
    add_task_options(s)
    s.add_argument("--demo", action="store_true",
                   help="use the offline scripted demo model; it runs in this process, so the demo's tasks end "
                   "with it (leaving, Ctrl-C or a closed terminal terminates them)")
    s.add_argument("--detach", action="store_true", help="start the task and print its id, as `start` does")
    s.add_argument("--continue", dest="continue_", action="store_true",
                   help="continue the conversation of the newest task in this workspace")
    s.add_argument("--resume", metavar="ID", help="continue the conversation of this task (or session)")
    s.add_argument("--verbose", action="store_true", help="also show what was written for the model alone "
                   "(the engine's reminders, the message a Ctrl-C sends)")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    resuming = bool(args.resume or args.continue_)
    if not args.task and not (resuming and sys.stdin.isatty()):
        raise UserError('say what the agent should do: run "TASK" (at a terminal, --continue or --resume ID alone '
                        "pick a conversation up)")
    if args.detach:
        if args.demo or resuming:
            raise UserError("--detach starts one new task with the configured model: not with --demo, --continue "
                            "or --resume")
        return await start.run(args)
    model = "demo-scripted" if args.demo else configured_model(args)

    def next_input(text: str) -> TaskInput:
        return task_input(argparse.Namespace(**{**vars(args), "task": text}), model)

    if args.task:
        next_input(args.task)  # a mistake in the options is one line before anything starts
    if args.demo:
        client, queue = await connect(args.settings), ""
    else:
        client, queue = await connect_serving(args.settings)
    async with AsyncExitStack() as stack:
        if args.demo:
            from fakes.scripted import ScriptedModelServer, demo_steps

            server = stack.enter_context(ScriptedModelServer())
            settings = ProviderSettings(openai_base_url=server.url, openai_api_key=None)
            queue = f"agent-demo-{uuid.uuid4().hex[:8]}"  # only this process's worker serves it
            plain = next_input

            def next_input(text: str) -> TaskInput:  # the demo model speaks the OpenAI wire, no failover
                server.add(*demo_steps(text))
                return plain(text).model_copy(update={"provider": "openai", "fallbacks": []})

            await local_worker(stack, client, queue, settings, args.settings)
        elif notice := await unpolled_notice(client, queue, args.settings.temporal):
            print(notice, file=sys.stderr)
        workspace = str(workspace_of(args))
        session, latest = await picked_up(client, args, workspace)
        talk = Conversation(client, queue, next_input, args.settings, workspace=workspace, session=session,
                            approval=ApprovalMode(args.approval), verbose=args.verbose)
        talk.tasks += [latest] if latest else []
        if resuming and session:
            replay(talk.console, await earlier_exchanges(client, session))
        return await (_demo(talk, args.task) if args.demo else converse(talk, args.task))


def replay(console: Console, exchanges: list[tuple[str, str]]) -> None:
    """The conversation so far, before the next message: each question and its answer."""
    if not exchanges:
        return
    console.print(f"[dim]earlier in this conversation (the last {len(exchanges)}):[/]")
    for asked, answer in exchanges:
        console.print(f"[bold]›[/] {safe(asked)}")
        console.print(safe(answer))
    console.print()


async def _demo(talk: Conversation, text: str | None) -> int:
    """The demo's conversation; whatever ends it ends its tasks that still run."""
    ended_by: list[signal.Signals] = []
    task, loop = asyncio.current_task(), asyncio.get_running_loop()
    assert task is not None

    def end(signum: signal.Signals) -> None:  # a closed terminal (SIGHUP) or SIGTERM, as Ctrl-C
        ended_by.append(signum)
        task.cancel()

    for signum in (signal.SIGHUP, signal.SIGTERM):
        loop.add_signal_handler(signum, end, signum)
    try:
        return await converse(talk, text)
    except (KeyboardInterrupt, asyncio.CancelledError):
        if ended_by:
            return 128 + ended_by[0]
        raise
    finally:
        await asyncio.shield(_end_demo(talk))


async def _end_demo(talk: Conversation) -> None:
    for workflow_id in talk.tasks:
        handle = talk.client.get_workflow_handle(workflow_id)
        with contextlib.suppress(RPCError, WorkflowQueryFailedError):
            if (await handle.query(AgentTaskWorkflow.status)).state in FINAL:
                # Its outcome is shown; it is closing (recording its session): let it.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(handle.result(), FINISHING_S)
                continue
        with contextlib.suppress(RPCError):  # it ended already
            await handle.terminate(reason=DEMO_ENDED)
            with contextlib.suppress(OSError):  # the terminal may be gone
                talk.console.print(safe(f"task {workflow_id} ended: {DEMO_ENDED}"))
