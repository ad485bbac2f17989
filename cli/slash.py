"""The slash commands at a conversation's prompt (cli/conversation.py), one function each in
one table, from which ``/help`` and the line for an unknown command are read. A command sees
the conversation as ``Talk``, what it reads and does of it, so the conversation, which runs
the commands, is the only one of the two that imports the other."""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NamedTuple, Protocol

from rich.console import Console
from temporalio.client import Client, WorkflowExecutionStatus

from cli.commands.rewind import rewind_task
from cli.render import safe
from cli.resume import session_tasks
from cli.tasks import QUERY_TIMEOUT, closed_outcome, describe, who
from contracts.task import ApprovalMode, TaskOutcome
from core.entries import Entry
from core.messages import Usage
from core.settings import Settings
from runtime.checkpoints import CheckpointError, Checkpoints
from workflows.task import AgentTaskWorkflow

DIFF_LINES = 400  # a longer diff is cut, saying how much more there is
COLOURS = (("+++", "bold"), ("---", "bold"), ("+", "green"), ("-", "red"), ("@@", "cyan"), ("diff ", "bold"))


class Talk(Protocol):
    """The conversation (cli/conversation.py) as the commands see it."""

    client: Client
    console: Console
    settings: Settings
    workspace: str
    session: str | None
    approval: ApprovalMode  # the next tasks'
    tasks: list[str]  # the conversation's tasks known here, oldest first
    seen: dict[str, int]  # per task: the events shown so far
    finished: set[str]  # tasks whose end was shown

    @property
    def current(self) -> str | None: ...

    async def running(self, workflow_id: str) -> bool: ...

    async def follow(self, workflow_id: str, started: float | None = None) -> TaskOutcome | None: ...


class Command(NamedTuple):
    usage: str
    says: str
    run: Callable[[Talk, str], Awaitable[None]]


def is_command(text: str) -> bool:
    """``/word ...``; a line such as ``/etc/hosts is wrong`` is a message."""
    return re.fullmatch(r"/[a-z]+(\s.*)?", text, re.DOTALL) is not None


async def run(talk: Talk, text: str) -> None:
    name, _, rest = text[1:].partition(" ")
    command = COMMANDS.get(name)
    if command is None:
        talk.console.print(f"unknown command /{safe(name)}; the commands are {', '.join('/' + n for n in COMMANDS)}")
        return
    await command.run(talk, rest.strip())


async def cost(talk: Talk, _: str) -> None:
    usage, spent, estimated = Usage(), 0.0, False
    tasks = await conversation_tasks(talk)
    for workflow_id in tasks:
        desc = await describe(talk.client, workflow_id)
        if desc.status == WorkflowExecutionStatus.RUNNING:
            now = await talk.client.get_workflow_handle(workflow_id).query(
                AgentTaskWorkflow.status, rpc_timeout=QUERY_TIMEOUT)
        else:
            now = await closed_outcome(talk.client, workflow_id)
        usage, spent, estimated = usage + now.usage, spent + now.cost_usd, estimated or now.cost_estimated
    cache = f" (cache: {usage.cache_read_tokens:,} read, {usage.cache_write_tokens:,} written)" if (
        usage.cache_read_tokens or usage.cache_write_tokens) else ""
    talk.console.print(f"conversation {safe(talk.session or '-')}: {len(tasks)} task(s) · {usage.input_tokens:,} in / "
                       f"{usage.output_tokens:,} out tokens{cache} · ${spent:.4f}{' (estimated)' if estimated else ''}")


async def diff(talk: Talk, _: str) -> None:
    points = Checkpoints.from_settings(talk.settings.checkpoints, talk.settings.paths)
    text = await asyncio.to_thread(workspace_diff, Path(talk.workspace), await conversation_tasks(talk), points)
    lines = text.rstrip("\n").splitlines()
    for line in lines[:DIFF_LINES]:
        style = next((colour for start, colour in COLOURS if line.startswith(start)), None)
        talk.console.print(f"[{style}]{safe(line)}[/]" if style else safe(line))
    if len(lines) > DIFF_LINES:
        talk.console.print(f"[dim]… ({len(lines) - DIFF_LINES} more lines)[/]")


def workspace_diff(workspace: Path, tasks: list[str], points: Checkpoints) -> str:
    """What changed in the workspace since the conversation's first checkpoint (taken before
    the first change a task of it made, on this host); without one, ``git diff`` of a repository."""
    try:
        for workflow_id in tasks:
            turns = points.turns(workspace, workflow_id)
            if turns:
                return points.diff(workspace, turns[min(turns)]) or "no changes since the conversation's first change"
    except CheckpointError as err:
        return f"the checkpoints could not be read: {err}"
    tracked = subprocess.run(["git", "-C", str(workspace), "diff", "HEAD", "--no-color"],
                             capture_output=True, text=True, check=False)
    if tracked.returncode != 0:
        return "no checkpoints of this conversation on this host, and the workspace is not a git repository"
    new = subprocess.run(["git", "-C", str(workspace), "ls-files", "--others", "--exclude-standard"],
                         capture_output=True, text=True, check=False).stdout.split()
    listed = "".join(f"new file (untracked): {path}\n" for path in new)
    return (tracked.stdout + listed) or "no changes (git diff HEAD is empty)"


async def conversation_tasks(talk: Talk) -> list[str]:
    """The conversation's tasks, oldest first: those the list knows and those started here."""
    listed = list(reversed(await session_tasks(talk.client, talk.session))) if talk.session else []
    return listed + [t for t in talk.tasks if t not in listed]


async def rewind(talk: Talk, rest: str) -> None:
    current = talk.current
    if current is None or not rest.isdigit():
        talk.console.print("usage: /rewind N (the last task, back to the end of its turn N)" if current else
                           "no task to rewind yet")
        return
    turn = int(rest)
    talk.console.print(safe(await rewind_task(talk.client, current, turn, talk.settings)))
    talk.finished.discard(current)
    talk.seen[current] = await shown_through(talk, current, turn)
    await talk.follow(current)


async def shown_through(talk: Talk, workflow_id: str, turn: int) -> int:
    """The events of the task up to the end of ``turn`` (shown already)."""
    page = await talk.client.get_workflow_handle(workflow_id).query(AgentTaskWorkflow.events, 0,
                                                                    rpc_timeout=QUERY_TIMEOUT)
    kept: list[Entry] = [e for e in page.entries if e.turn <= turn]
    return kept[-1].seq + 1 if kept else 0


async def stop(talk: Talk, _: str) -> None:
    current = talk.current
    if current is None or not await talk.running(current):
        talk.console.print("no task is running")
        return
    await talk.client.get_workflow_handle(current).signal(AgentTaskWorkflow.stop, f"stopped by {who()} at the prompt")
    await talk.follow(current)


async def approval(talk: Talk, rest: str) -> None:
    modes = [m.value for m in ApprovalMode]
    if rest and rest not in modes:
        talk.console.print(f"approval modes: {', '.join(modes)}")
        return
    if rest:
        talk.approval = ApprovalMode(rest)
    talk.console.print(f"approval for the next tasks: {talk.approval.value}")


async def help_(talk: Talk, _: str) -> None:
    for command in COMMANDS.values():
        talk.console.print(f"  {command.usage:<16} {command.says}", markup=False)
    talk.console.print("  Enter            watch the task that goes on (after a Ctrl-C), or show how it ended\n"
                       "  typing           while a task runs: queued, and sent when the turn ends\n"
                       "  Ctrl-C           while a task runs: stop its current step, the prompt returns; "
                       "again, or at the prompt: leave (the task goes on)\n"
                       "  Ctrl-D           leave, at once (a task that runs goes on)", markup=False)


COMMANDS: dict[str, Command] = {
    "cost": Command("/cost", "tokens and cost of this conversation's tasks so far", cost),
    "diff": Command("/diff", "what this conversation changed in the workspace", diff),
    "rewind": Command("/rewind N", "take the last task back to the end of its turn N (workspace restored)", rewind),
    "stop": Command("/stop", "stop the task that is running", stop),
    "approval": Command("/approval MODE", "which calls of the next tasks wait for you: dangerous, always, never",
                        approval),
    "help": Command("/help", "this list", help_),
}
