"""A conversation you stay in: at a terminal, ``run`` keeps a prompt after the task's answer.

A conversation is a session: a line typed at the prompt starts its next task (with the
history of the earlier ones), or reaches the task still running as an interjection;
``--continue``/``--resume`` pick it up later (cli/resume.py), slash commands act on it
(cli/slash.py). Ctrl-C is read by the event loop, never by a thread blocked in ``input``:
the first while a task runs cuts off the current step with an interjection (a question
asked then is withdrawn: an approval asked is declined) and returns the prompt once the
task has taken it; a second leaves, saying how to come back. Every other key is read by the
conversation too (cli/typeahead.py): what is typed while a task runs is queued, shown as
queued and sent when the turn ends; Ctrl-D leaves at once, even while a task runs; Enter
alone shows what the task did since the prompt came back, to its end. docs/cli.md, Conversations.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Callable

from rich.console import Console
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowQueryFailedError
from temporalio.service import RPCError

from cli import slash
from cli.ask import decline
from cli.follow import POLL_S, Follower
from cli.hints import invoked
from cli.local import make_follower
from cli.render import INTERRUPTED, make_console, safe
from cli.screen import ConsoleSink
from cli.tasks import MAX_INTERJECTION, QUERY_TIMEOUT, UserError, closed_outcome, describe, start_task, ui_link, who
from cli.typeahead import Detached, Keys, nothing, read_prompt
from contracts.task import ApprovalMode, Interjection, TaskInput, TaskOutcome, TaskState
from core.entries import UserMessage
from core.settings import Settings, TemporalSettings
from runtime.secrets import SecretStore
from workflows.task import AgentTaskWorkflow


async def converse(talk: Conversation, text: str | None) -> int:
    """``run``'s body: the first task (or the task of the conversation picked up that still
    runs), then, at a terminal, the prompt; the exit status."""
    if not sys.stdin.isatty():
        return await talk.once(text or "")
    with talk.keys():
        try:
            current = talk.current
            if text:
                await talk.start(text)
            elif current is not None and await talk.running(current):
                await talk.follow(current)
            return await talk.stay()
        except Detached:
            talk.console.print()
            await talk.leave()
            return 130


def come_back(workflow_id: str | None, running: bool, temporal: TemporalSettings) -> str:
    """The line that says how to come back to the conversation (and to the task that runs)."""
    if workflow_id is None:
        return "left the conversation"
    resume = invoked(f"run --resume {workflow_id}", temporal)
    if running:
        return (f"task {workflow_id} goes on; follow it with: {invoked(f'watch {workflow_id}', temporal)} · "
                f"back to the conversation: {resume}")
    return f"left the conversation; come back to it with: {resume}"


class Conversation:
    """The tasks of one session, as one person at one terminal has them."""

    def __init__(self, client: Client, queue: str, next_input: Callable[[str], TaskInput], settings: Settings, *,
                 workspace: str, session: str | None, approval: ApprovalMode, console: Console | None = None,
                 verbose: bool = False) -> None:
        self.client, self.queue, self.next_input, self.workspace = client, queue, next_input, workspace
        self.settings = settings  # starter.py's
        self.secrets = SecretStore.from_settings(settings.secrets)
        self.session, self.approval, self.verbose = session, approval, verbose
        self.console = console or make_console()
        self.tasks: list[str] = []  # the conversation's tasks known here, oldest first
        self.seen: dict[str, int] = {}  # per task: the events shown so far
        self.finished: set[str] = set()  # tasks whose end was shown
        self.code = 0  # the exit status of the last task that ended: 0 for DONE
        self.pressed = asyncio.Event()  # a Ctrl-C not handled yet
        self.typed: Keys | None = None  # at a terminal: the keys, read by the conversation

    @property
    def current(self) -> str | None:
        return self.tasks[-1] if self.tasks else None

    @contextlib.contextmanager
    def keys(self):
        """Ctrl-C, and every other key, as the conversation reads them, while inside."""
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self.pressed.set)
        keys = Keys()
        keys.on_line = self._queued
        try:
            with keys.reading():
                self.typed = keys
                yield
        finally:
            self.typed = None
            loop.remove_signal_handler(signal.SIGINT)

    def _queued(self, line: str) -> None:
        self.console.print(f"[dim]queued: {safe(line)}[/]")

    # ---- tasks ----------------------------------------------------------------------

    async def once(self, text: str) -> int:
        """Without a terminal: the one task, followed to its end (a Ctrl-C leaves it running)."""
        try:
            await self.start(text)
        except (KeyboardInterrupt, asyncio.CancelledError):
            self.console.print("\n" + safe(come_back(self.current, True, self.settings.temporal)))
            raise
        return self.code

    async def start(self, text: str) -> TaskOutcome | None:
        """Start the conversation's next task with ``text`` and follow it."""
        inp = self.next_input(text).model_copy(update={"approval": self.approval, "session": self.session})
        workflow_id = await start_task(self.client, inp, self.queue, self.settings.temporal, conversation=True)
        self.session = inp.session
        self.tasks.append(workflow_id)
        self.console.print(f"[dim]task {workflow_id} · {ui_link(self.client, workflow_id, self.settings.temporal)}[/]")
        return await self.follow(workflow_id, time.monotonic())

    async def say(self, text: str) -> None:
        """A line typed at the prompt: to the task still running, else the next task. A task
        whose answer is shown is finished even while its workflow closes (it records the
        session then, and reads no more): the next task starts once it has closed, with this
        exchange in its history. A message that reached a task as it ended unread starts it too."""
        current = self.current
        if current is not None and current not in self.finished and await self.running(current):
            since = self.seen.get(current, 0)
            sent = await self.interject(current, text)
            if await self.follow(current) is None or await self._read(current, sent, since):
                return
            self.console.print("[dim]· the task ended before it read that: it goes to the next task[/]")
        elif current is not None and current not in self.finished:
            await self.follow(current)  # what it did after the prompt came back, to its end
        if current is not None:
            await self._closed(current)
        await self.start(text)

    async def running(self, workflow_id: str) -> bool:
        return (await describe(self.client, workflow_id)).status == WorkflowExecutionStatus.RUNNING

    async def interject(self, workflow_id: str, text: str) -> str:
        """Send ``text`` to the task as a person's message; the text sent (its secrets redacted)."""
        if len(text.encode()) > MAX_INTERJECTION:
            raise UserError(f"the message is {len(text.encode()):,} bytes; the limit is {MAX_INTERJECTION:,}")
        message = Interjection(text=self.secrets.redact(text), sent_by=who())
        await self.client.get_workflow_handle(workflow_id).signal(AgentTaskWorkflow.interject, message)
        return message.text

    async def _read(self, workflow_id: str, text: str, since: int) -> bool:
        """Whether the task's events after ``since`` hold ``text`` as a person's message."""
        page = await self.client.get_workflow_handle(workflow_id).query(
            AgentTaskWorkflow.events, since, rpc_timeout=QUERY_TIMEOUT)
        return any(isinstance(e, UserMessage) and (e.text == text or e.text.startswith(text + "\n"))
                   for e in page.entries)

    async def _closed(self, workflow_id: str) -> None:
        """Until the task's workflow has closed (its session recorded); a Ctrl-C meanwhile leaves."""
        closing = asyncio.ensure_future(self.client.get_workflow_handle(workflow_id).result())
        pressed = asyncio.ensure_future(self.pressed.wait())
        try:
            await asyncio.wait({closing, pressed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            left = pressed.done() and not closing.done()
            for waiting in (closing, pressed):
                waiting.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await waiting
        if left:
            self.pressed.clear()
            raise Detached

    async def follow(self, workflow_id: str, started: float | None = None) -> TaskOutcome | None:
        """Show the task until it ends (its outcome), or until a Ctrl-C has cut off its current
        step and the task has taken the interjection (None: the prompt returns while it goes
        on). A second Ctrl-C before that leaves."""
        outcome = await self._follow(workflow_id, started)
        if outcome is None:
            self.console.print("[dim]· the task goes on: type to tell it more, Enter to watch it, /stop to stop it[/]")
        return outcome

    async def _follow(self, workflow_id: str, started: float | None) -> TaskOutcome | None:
        follower = make_follower(self.client, workflow_id, self.settings, verbose=self.verbose)
        follower.seq = self.seen.get(workflow_id, 0)
        keys, sink = self.typed, follower.sink
        if keys is not None and isinstance(sink, ConsoleSink):  # what is typed meanwhile, by its console
            sink.typing, keys.on_draft, keys.on_line = keys, lambda _: sink.typed(), sink.queued
        following = asyncio.ensure_future(follower.run(lambda: closed_outcome(self.client, workflow_id), started))
        leaving = asyncio.ensure_future(keys.ended.wait()) if keys is not None else None
        told: asyncio.Future | None = None
        try:
            while True:
                pressed = asyncio.ensure_future(self.pressed.wait())
                await asyncio.wait({following, pressed, *(f for f in (told, leaving) if f is not None)},
                                   return_when=asyncio.FIRST_COMPLETED)
                pressed.cancel()
                if leaving is not None and leaving.done():
                    raise Detached  # Ctrl-D: the task goes on
                if following.done():
                    outcome = following.result()
                    self.finished.add(workflow_id)
                    self.code = 0 if outcome.status == TaskState.DONE else 1
                    return outcome
                if told is not None and told.done():
                    told.result()
                    return None
                self.pressed.clear()
                if told is not None:
                    raise Detached
                since = follower.seq
                if asked := follower.withdraw():  # its prompt goes; an approval asked is declined
                    await decline(self.client, *asked, who())
                await self.interject(workflow_id, INTERRUPTED)  # sent before a second Ctrl-C is read
                follower.sink.note("interrupted: the current step is cut off and the task is told you are "
                                   "waiting (Ctrl-C again to leave)")
                told = asyncio.ensure_future(self._taken(workflow_id, follower, since))
        finally:
            if keys is not None:
                keys.on_draft, keys.on_line = nothing, self._queued
            for running in (following, told, leaving):
                if running is not None and not running.done():
                    running.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await running
            self.seen[workflow_id] = follower.seq

    async def _taken(self, workflow_id: str, follower: Follower, since: int) -> None:
        """Once the follower has shown the task taking the interruption (what ran is cut off
        by then): its events after ``since`` hold the message."""
        handle = self.client.get_workflow_handle(workflow_id)
        while True:
            try:
                page = await handle.query(AgentTaskWorkflow.events, since, rpc_timeout=QUERY_TIMEOUT)
            except (RPCError, WorkflowQueryFailedError):
                await asyncio.sleep(1.0)
                continue
            taken = [e.seq for e in page.entries if isinstance(e, UserMessage) and e.text == INTERRUPTED]
            if taken:
                while follower.seq <= taken[0]:
                    await asyncio.sleep(POLL_S)
                return
            await asyncio.sleep(POLL_S)

    # ---- the prompt -----------------------------------------------------------------

    async def stay(self) -> int:
        """The prompt, until Ctrl-D (the last task's exit status) or a Ctrl-C (Detached)."""
        self.console.print("[dim]· type to continue this conversation · /help for commands · Ctrl-C to leave[/]")
        while True:
            line = await self.read()
            if line is None:
                self.console.print()
                await self.leave()
                return self.code
            try:
                await self.answer(line.strip())
            except (UserError, RPCError, WorkflowQueryFailedError) as err:  # said, and the prompt stays
                self.console.print(f"[red]error:[/] {safe(getattr(err, 'message', '') or str(err))}")

    async def answer(self, text: str) -> None:
        if not text:
            current = self.current
            if current is not None and current not in self.finished:
                await self.follow(current)  # Enter: what the task did since the prompt came back, to its end
        elif slash.is_command(text):
            await slash.run(self, text)
        else:
            await self.say(text)

    async def read(self) -> str | None:
        """One line at the prompt (first, what was queued while a task ran); None at Ctrl-D; a
        Ctrl-C there raises Detached."""
        assert self.typed is not None, "the prompt is read at a terminal, inside keys()"
        return await read_prompt(self.typed, self.console, self.pressed, slash.is_command, self._queued)

    async def leave(self) -> None:
        current = self.current
        running = current is not None and await self.running(current)
        self.console.print(safe(come_back(current, running, self.settings.temporal)))
