"""Following a task: poll its ``events`` query (nothing is added to the history), show what
is new, ask a person inline when the task waits for one, and show retries from the
server's view of pending activities."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import timedelta
from typing import Any, Protocol

from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.service import RPCError

from cli.events import EventMapper
from cli.render import render_entry, render_outcome, safe
from contracts.activities import LLM_ACTIVITY, LiveText
from contracts.task import ApprovalDecision, EventsPage, Interjection, TaskOutcome, TaskStatus
from core.entries import AiMessage, Entry, ToolCall
from core.text import terminal_safe
from workflows.task import AgentTaskWorkflow

POLL_S = 0.25
LIVE_POLL_S = 0.05  # while the model streams: its text is read this often
DESCRIBE_EVERY_S = 1.0
QUERY_TIMEOUT = timedelta(seconds=5)


class Sink(Protocol):
    def delta(self, turn: int, text: str) -> None: ...
    def entry(self, entry: Entry, status: TaskStatus) -> None: ...
    def note(self, text: str) -> None: ...
    def retry(self, activity: str, attempt: int, reason: str, next_in_s: float | None) -> None: ...
    def waiting(self, status: TaskStatus) -> None: ...
    def outcome(self, outcome: TaskOutcome, duration_s: float | None) -> None: ...


class ConsoleSink:
    def __init__(self, console) -> None:
        self.console = console
        self.streamed: set[int] = set()  # turns whose text was already shown live
        self.open_line = False

    def delta(self, turn: int, text: str) -> None:
        if turn not in self.streamed:
            self.streamed.add(turn)
            self.console.print("[cyan]model[/] ", end="")
        self.console.print(terminal_safe(text), end="", markup=False, highlight=False)
        self.open_line = True

    def entry(self, entry: Entry, status: TaskStatus) -> None:
        if self.open_line:
            self.console.print()
            self.open_line = False
        render_entry(self.console, entry, text_shown=entry.turn in self.streamed)

    def note(self, text: str) -> None:
        self.console.print(f"[dim]· {safe(text)}[/]")

    def retry(self, activity: str, attempt: int, reason: str, next_in_s: float | None) -> None:
        when = f", next try in {next_in_s:.1f}s" if next_in_s is not None else ""
        self.console.print(f"[yellow]↻ {activity} attempt {attempt} failed: {safe(reason)}{when}[/]")

    def waiting(self, status: TaskStatus) -> None:
        pass  # the inline prompt says it

    def outcome(self, outcome: TaskOutcome, duration_s: float | None) -> None:
        render_outcome(self.console, outcome, duration_s)


class JsonSink:
    def __init__(self, workflow_id: str, out=None) -> None:
        self.mapper = EventMapper(workflow_id)
        self.out = out or sys.stdout
        self._emit(self.mapper.begin())

    def delta(self, turn: int, text: str) -> None:
        self._emit([{"type": "text.delta", "turn": turn, "text": text}])

    def _emit(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            self.out.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
        self.out.flush()

    def entry(self, entry: Entry, status: TaskStatus) -> None:
        self._emit(self.mapper.entry(entry, status.usage.model_dump()))

    def note(self, text: str) -> None:
        pass

    def retry(self, activity: str, attempt: int, reason: str, next_in_s: float | None) -> None:
        self._emit([{"type": "retry", "activity": activity, "attempt": attempt, "reason": reason, "next_in_s": next_in_s}])

    def waiting(self, status: TaskStatus) -> None:
        self._emit(self.mapper.waiting(status))

    def outcome(self, outcome: TaskOutcome, duration_s: float | None) -> None:
        self._emit(self.mapper.finish(outcome))


def pending_retries(desc: WorkflowExecutionDescription) -> list[tuple[str, int, str, float | None]]:
    """(activity, attempt, last failure, seconds to next attempt) of retrying activities."""
    found = []
    for pending in desc.raw_description.pending_activities:
        if pending.attempt > 1 and pending.HasField("last_failure"):
            next_in = None
            if pending.HasField("next_attempt_schedule_time"):
                next_in = max(0.0, pending.next_attempt_schedule_time.ToDatetime().timestamp() - time.time())
            found.append((pending.activity_type.name, pending.attempt - 1, pending.last_failure.message, next_in))
    return found


class Follower:
    def __init__(self, client: Client, workflow_id: str, sink: Sink, *, interactive: bool, ask) -> None:
        self.client, self.workflow_id, self.sink = client, workflow_id, sink
        self.interactive, self.ask = interactive, ask
        self.handle = client.get_workflow_handle(workflow_id)
        self.seq = 0
        self.asked: str | None = None
        self.retries_seen: set[tuple[str, int]] = set()
        self.next_describe = 0.0
        self.live_key: tuple[int, int] | None = None  # (turn, attempt) of the text being shown
        self.live_shown = 0  # characters of it shown so far
        self.live_done_turn = 0  # turns up to this one have their reply shown in full

    async def run(self, closed_outcome, started: float | None = None) -> TaskOutcome:
        live = asyncio.ensure_future(self._live_loop())
        try:
            return await self._follow(closed_outcome, started)
        finally:
            live.cancel()

    async def _follow(self, closed_outcome, started: float | None) -> TaskOutcome:
        warned = False
        while True:
            try:
                page: EventsPage = await self.handle.query(AgentTaskWorkflow.events, self.seq, rpc_timeout=QUERY_TIMEOUT)
            except RPCError:
                desc = await self.handle.describe()
                if desc.status != WorkflowExecutionStatus.RUNNING:
                    outcome = await closed_outcome()
                    self.sink.outcome(outcome, None)
                    return outcome
                if not warned:
                    self.sink.note("no worker is answering; waiting (start one with `python worker.py`)")
                    warned = True
                await asyncio.sleep(1.0)
                continue
            if page.outcome is None and await self._show(page):
                continue
            if page.outcome is not None:
                await self._show(page)
                self.sink.outcome(page.outcome, time.monotonic() - started if started else None)
                return page.outcome
            await self._retries()
            await asyncio.sleep(POLL_S)

    async def _show(self, page: EventsPage) -> bool:
        """Show new entries; ask a person if the task waits. True when it asked."""
        if self.seq < page.base:
            self.sink.note(f"{page.base - self.seq} earlier entries are in earlier runs of this task")
        for entry in page.entries:
            self._finish_live_text(entry)
            self.sink.entry(entry, page.status)
        self.seq = page.next_seq
        status = page.status
        waiting_on = status.pending_approval.call_id if status.pending_approval else status.question
        if page.outcome is None and status.state.waiting and waiting_on != self.asked:
            self.asked = waiting_on
            self.sink.waiting(status)
            await self.ask(self.client, self.workflow_id, status, self.interactive)
            return True
        return False

    def _finish_live_text(self, entry: Entry) -> None:
        """The rest of a reply whose start was shown live (the last heartbeat before the call
        completed may not have reached the server), so the console shows it whole, once."""
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
            if not isinstance(live, LiveText) or live.turn <= self.live_done_turn:
                continue  # checked after the await: the turn's entry may have been shown meanwhile
            turn = live.turn
            if (live.turn, live.attempt) != self.live_key:  # a new call, or a retry starting over
                self.live_key, self.live_shown = (live.turn, live.attempt), 0
            end = live.offset + len(live.text)
            if end > self.live_shown:
                self.sink.delta(turn, live.text[max(self.live_shown - live.offset, 0):])
                self.live_shown = end
        return pending_call

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
            if desc.status != WorkflowExecutionStatus.RUNNING:
                return
            streaming = await self._live_text(desc)
            await asyncio.sleep(LIVE_POLL_S if streaming else POLL_S)

    async def _retries(self) -> None:
        now = time.monotonic()
        if now < self.next_describe:
            return
        self.next_describe = now + DESCRIBE_EVERY_S
        try:
            desc = await self.handle.describe()
        except RPCError:
            return
        for activity, attempt, reason, next_in in pending_retries(desc):
            if (activity, attempt) not in self.retries_seen:
                self.retries_seen.add((activity, attempt))
                self.sink.retry(activity, attempt, reason, next_in)




async def ask_person(client: Client, workflow_id: str, status: TaskStatus, console, interactive: bool, who: str) -> None:
    """Ask inline for an approval or a reply when a person is at the terminal; else say how."""
    handle = client.get_workflow_handle(workflow_id)
    pending = status.pending_approval
    if pending is not None:
        args = json.dumps(pending.arguments, ensure_ascii=False)
        console.print(
            f"[bold yellow]? approval needed[/] {safe(pending.tool)} {safe(args[:300])} "
            f"[dim]({safe(pending.danger)}: {safe(pending.reason)})[/]"
        )
        if not interactive:
            console.print(f"  approve: python starter.py approve {workflow_id} --call {safe(pending.call_id)}   "
                          f"deny: python starter.py approve {workflow_id} --call {safe(pending.call_id)} --deny --reason TEXT")
            return
        answer = (await asyncio.to_thread(input, "  approve? [y/N] ")).strip().lower()
        reason = (await asyncio.to_thread(input, "  reason (optional): ")).strip()
        decision = ApprovalDecision(approved=answer in ("y", "yes"), call_id=pending.call_id, digest=pending.digest or None,
                                    reason=reason, decided_by=who)
        try:
            await handle.execute_update(AgentTaskWorkflow.decide, decision)
        except WorkflowUpdateFailedError as err:
            console.print(f"[yellow]· decision not accepted: {safe(str(getattr(err.cause, 'message', err.cause)))}[/]")
    elif status.question is not None:
        console.print(f"[bold yellow]? the task asks:[/] {safe(status.question or '')}")
        if not interactive:
            console.print(f'  reply: python starter.py reply {workflow_id} "TEXT"')
            return
        text = (await asyncio.to_thread(input, "  reply> ")).strip()
        if text:
            from runtime.secrets import SecretStore

            text = SecretStore.from_env().redact(text)
            await handle.signal(AgentTaskWorkflow.interject, Interjection(text=text, sent_by=who))
