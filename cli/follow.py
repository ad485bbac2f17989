"""Following a task: poll its ``events`` query (nothing is added to the history), show what
is new, ask a person inline when the task or one of its sub-agents waits for one, and show
retries and streamed text from the server's view of pending activities."""

from __future__ import annotations

import asyncio
import contextlib
import time

from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus
from temporalio.service import RPCError

from cli.hints import invoked
from cli.sinks import Sink
from cli.subagents import waiting_subagents
from cli.tasks import QUERY_TIMEOUT
from cli.workers import RESTARTED, queue_polled, unpin
from contracts.activities import LLM_ACTIVITY, LiveText
from contracts.task import EventsPage, TaskOutcome, TaskStatus
from core.entries import AiMessage, Entry, ToolCall
from core.settings import TemporalSettings
from workflows.task import AgentTaskWorkflow

POLL_S = 0.25
LIVE_POLL_S = 0.05  # while the model streams: its text is read this often
DESCRIBE_EVERY_S = 1.0


def pending_retries(desc: WorkflowExecutionDescription) -> list[tuple[str, int, str, float | None]]:
    """(activity, attempt, last failure, seconds to next attempt) of retrying activities."""
    found = []
    for pending in desc.raw_description.pending_activities:
        if pending.attempt > 1 and pending.HasField("last_failure"):
            next_in = None
            if pending.HasField("next_attempt_schedule_time"):
                next_in = max(0.0, pending.next_attempt_schedule_time.ToMicroseconds() / 1e6 - time.time())
            found.append((pending.activity_type.name, pending.attempt - 1, pending.last_failure.message, next_in))
    return found


class Follower:
    """Follows one task: its entries (the ``events`` query), the text its model is streaming
    (the server's view of the pending model call), retries, and what it or one of its
    sub-agents waits for. One lock orders everything a sink is told, so live text never
    comes before the entries of the turns it follows."""

    def __init__(self, client: Client, workflow_id: str, sink: Sink, *, interactive: bool, ask,
                 temporal: TemporalSettings | None = None) -> None:
        self.client, self.workflow_id, self.sink = client, workflow_id, sink
        self.temporal = temporal or TemporalSettings()  # the connection its hints repeat
        self.interactive, self.ask = interactive, ask
        self.handle = client.get_workflow_handle(workflow_id)
        self.lock = asyncio.Lock()
        self.seq = 0
        self.asked: str | None = None
        self.asked_subagents: set[tuple[str, str]] = set()  # (workflow id, call id or question)
        self.retries_seen: set[tuple[str, int]] = set()
        self.next_describe = 0.0
        self.live_key: tuple[int, int] | None = None  # (turn, attempt) of the text being shown
        self.live_shown = 0  # characters of it shown so far
        self.live_done_turn = 0  # turns up to this one have their reply shown in full
        self.closed = False  # Temporal closed the task (terminated it, say): its replay never ends it
        self.question: tuple[str, TaskStatus, asyncio.Future] | None = None  # (whose, what, its asking)

    async def run(self, closed_outcome, started: float | None = None) -> TaskOutcome:
        live = asyncio.ensure_future(self._live_loop())
        try:
            return await self._follow(closed_outcome, started)
        finally:
            live.cancel()
            self.sink.close()

    async def _follow(self, closed_outcome, started: float | None) -> TaskOutcome:
        warned = False
        replayable = await self._replayable()
        while True:
            closed = self.closed  # noted before the page is asked for: that page is then the last
            async with self.lock:
                try:
                    page: EventsPage | None = await self._page() if replayable else None
                except RPCError:
                    page = None
                if page is None:
                    desc = await self.handle.describe()
                    if desc.status != WorkflowExecutionStatus.RUNNING:
                        return await self._closed_end(closed_outcome)
                    if not warned:
                        restarted = await queue_polled(self.client, desc.task_queue)
                        self.sink.note(RESTARTED if restarted else
                                       f"no worker is answering; waiting (start one with `{invoked('worker', self.temporal)}`)")
                        warned = True
                    await unpin(self.client, self.workflow_id)  # its last worker may be dead: any may answer
                    asked = False
                else:
                    asked = await self._show(page, ask=not closed)
                    if page.outcome is not None:
                        self.sink.outcome(page.outcome, time.monotonic() - started if started else None)
                        return page.outcome
                    if closed:  # terminated or timed out: the task itself never got to say how it ended
                        return await self._closed_end(closed_outcome)
            if page is None:
                await asyncio.sleep(1.0)
            elif not asked:
                await self._watch_server()
                await asyncio.sleep(POLL_S)

    async def _closed_end(self, closed_outcome) -> TaskOutcome:
        """Under the lock: how Temporal says the task ended (its result, or why it has none)."""
        outcome = await closed_outcome()
        await self.sink.ready([], True)
        self.sink.outcome(outcome, None)
        return outcome

    def _note(self, desc: WorkflowExecutionDescription) -> None:
        """Note a closed task. A run continued as new is followed into its next run: the handle
        names no run, so a description is of the latest one."""
        if desc.status not in (None, WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.CONTINUED_AS_NEW):
            self.closed = True

    async def _replayable(self) -> bool:
        """False for a finished task no worker could replay (nobody polls its queue): its
        outcome is all there is to show, so no query waits for an answer that cannot come."""
        try:
            desc = await self.handle.describe()
        except RPCError:
            return True
        self._note(desc)
        return desc.status == WorkflowExecutionStatus.RUNNING or await queue_polled(self.client, desc.task_queue)

    async def _page(self) -> EventsPage:
        return await self.handle.query(AgentTaskWorkflow.events, self.seq, rpc_timeout=QUERY_TIMEOUT)

    async def _show(self, page: EventsPage, *, ask: bool = True) -> bool:
        """Show new entries; ask a person if the task waits (and ``ask``: not for a task Temporal
        closed, whose replay may stop at a wait). True when it asked. Under the lock."""
        await self.sink.ready([entry.turn for entry in page.entries], page.outcome is not None)
        if self.seq < page.base:
            self.sink.note(f"{page.base - self.seq} earlier entries are in earlier runs of this task")
        for entry in page.entries:
            self._finish_live_text(entry)
            self.sink.entry(entry, page.status)
        self.seq = page.next_seq
        status = page.status
        self.sink.status(status)
        waiting_on = status.pending_approval.call_id if status.pending_approval else status.question
        if ask and page.outcome is None and status.state.waiting and waiting_on != self.asked:
            self.asked = waiting_on
            self.sink.waiting(status)
            await self._asked(self.workflow_id, status)
            return True
        return False

    async def _asked(self, workflow_id: str, status: TaskStatus) -> None:
        """Ask a person, until they answer or the question is withdrawn (``withdraw``)."""
        with self.sink.paused():
            asking = asyncio.ensure_future(self.ask(self.client, workflow_id, status, self.interactive))
            self.question = (workflow_id, status, asking)
            try:
                await asyncio.wait({asking})
            finally:
                self.question = None
                asking.cancel()  # when the follower itself is cancelled: so is its question
        if not asking.cancelled():
            asking.result()

    def withdraw(self) -> tuple[str, TaskStatus] | None:
        """Withdraw the question asked now (the person pressed Ctrl-C at it): its prompt is
        erased and the follower goes on. (whose, what) was asked, if anything was."""
        if self.question is None:
            return None
        workflow_id, status, asking = self.question
        asking.cancel()
        return workflow_id, status

    def _finish_live_text(self, entry: Entry) -> None:
        """The rest of a reply whose start was shown live (the last heartbeat before the call
        completed may not have reached the server), so the reply is shown whole, once."""
        if not isinstance(entry, (AiMessage, ToolCall)):
            return
        if self.live_key is not None and entry.turn == self.live_key[0] and 0 < self.live_shown < len(entry.text):
            self.sink.delta(entry.turn, entry.text[self.live_shown:])
        self.live_done_turn = max(self.live_done_turn, entry.turn)
        self.live_key, self.live_shown = None, 0

    async def _live_text(self, desc: WorkflowExecutionDescription) -> bool:
        """Show what is new of the pending model call's text. True while a model call is pending."""
        pending_call = False
        for pending in desc.raw_description.pending_activities:
            if pending.activity_type.name != LLM_ACTIVITY:
                continue
            pending_call = True
            if not pending.heartbeat_details.payloads:
                continue
            try:
                (live,) = await self.client.data_converter.decode(list(pending.heartbeat_details.payloads), [LiveText])
            except Exception:  # details of another shape (a plain heartbeat): nothing to show
                continue
            if isinstance(live, LiveText):
                async with self.lock:
                    await self._show_live(live)
        return pending_call

    async def _show_live(self, live: LiveText) -> None:
        """Under the lock. A call's first text waits until the entries before it are shown:
        the call was started after they were appended, so one events query has them."""
        key = (live.turn, live.attempt)
        if live.turn <= self.live_done_turn:
            return  # its entry is shown already
        if key != self.live_key:
            if self.live_key is None or self.live_key[0] != live.turn:
                with contextlib.suppress(RPCError):
                    await self._show(await self._page())
                if live.turn <= self.live_done_turn:
                    return
            elif self.live_shown:  # the same turn's call again: a retry starts over
                self.sink.restart(live.turn)
            self.live_key, self.live_shown = key, 0
        end = live.offset + len(live.text)
        if end > self.live_shown:
            self.sink.delta(live.turn, live.text[max(self.live_shown - live.offset, 0):])
            self.live_shown = end

    async def _live_loop(self) -> None:
        """While the task runs: the model's text as it streams (the LLM activity's heartbeat
        details in the server's view of pending activities), wherever its worker runs. Polls
        often while a model call is pending, seldom otherwise."""
        while True:
            try:
                desc = await self.handle.describe()
            except RPCError:
                await asyncio.sleep(1.0)
                continue
            self.sink.started_at(desc.start_time)
            self._note(desc)
            if desc.status != WorkflowExecutionStatus.RUNNING:
                return
            streaming = await self._live_text(desc)
            await asyncio.sleep(LIVE_POLL_S if streaming else POLL_S)

    async def _watch_server(self) -> None:
        """Every second: retrying activities, and sub-agents waiting for a person."""
        now = time.monotonic()
        if now < self.next_describe:
            return
        self.next_describe = now + DESCRIBE_EVERY_S
        try:
            desc = await self.handle.describe()
        except RPCError:
            return
        self._note(desc)
        for activity, attempt, reason, next_in in pending_retries(desc):
            if (activity, attempt) not in self.retries_seen:
                self.retries_seen.add((activity, attempt))
                self.sink.retry(activity, attempt, reason, next_in)
        if desc.raw_description.pending_children:
            for child_id, status in await waiting_subagents(self.client, desc):
                await self._ask_subagent(child_id, status)

    async def _ask_subagent(self, child_id: str, status: TaskStatus) -> None:
        waiting_on = status.pending_approval.call_id if status.pending_approval else status.question or ""
        if (child_id, waiting_on) in self.asked_subagents:
            return
        self.asked_subagents.add((child_id, waiting_on))
        async with self.lock:
            self.sink.subagent_waiting(child_id, status)
            await self._asked(child_id, status)
