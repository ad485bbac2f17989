"""``run TASK``: start a task and follow it; at a terminal, stay in its conversation
(cli/conversation.py). Without a terminal: exit 0 on DONE, 1 otherwise."""

from __future__ import annotations

import argparse
import sys
import uuid
from contextlib import AsyncExitStack

from activities.llm import ProviderSettings
from cli.commands import start
from cli.conversation import Conversation, converse
from cli.local import local_worker
from cli.options import add_task_options
from cli.resume import picked_up
from cli.tasks import UserError, configured_model, task_input, workspace_of
from contracts.task import ApprovalMode, TaskInput
from temporal.client import connect, is_embedded
from worker import task_queue


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("run", help="start a task and follow it; at a terminal, stay in its conversation")
    s.add_argument("task", nargs="?", help="the instruction (with --continue or --resume: the next one, optional)")
    add_task_options(s)
    s.add_argument("--demo", action="store_true", help="use the offline scripted demo model")
    s.add_argument("--detach", action="store_true", help="start the task and print its id, as `start` does")
    s.add_argument("--continue", dest="continue_", action="store_true",
                   help="continue the conversation of the newest task in this workspace")
    s.add_argument("--resume", metavar="ID", help="continue the conversation of this task (or session)")
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
    client = await connect(args.settings)
    async with AsyncExitStack() as stack:
        queue, settings = task_queue(args.settings.temporal), None
        if args.demo:
            from fakes.scripted import ScriptedModelServer, demo_steps

            server = stack.enter_context(ScriptedModelServer())
            settings = ProviderSettings(openai_base_url=server.url, openai_api_key=None)
            queue = f"agent-demo-{uuid.uuid4().hex[:8]}"  # only this process's worker serves it
            plain = next_input

            def next_input(text: str) -> TaskInput:  # the demo model speaks the OpenAI wire, no failover
                server.add(*demo_steps(text))
                return plain(text).model_copy(update={"provider": "openai", "fallbacks": []})
        if args.demo or is_embedded(args.settings.temporal):
            await local_worker(stack, client, queue, settings, args.settings)
        workspace = str(workspace_of(args))
        session, latest = await picked_up(client, args, workspace)
        talk = Conversation(client, queue, next_input, args.settings, workspace=workspace, session=session,
                            approval=ApprovalMode(args.approval))
        talk.tasks += [latest] if latest else []
        return await converse(talk, args.task)
