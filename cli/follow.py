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

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.service import RPCError

from cli.events import EventMapper
from cli.render import render_entry, render_outcome
from contracts.task import ApprovalDecision, EventsPage, Interjection, TaskOutcome, TaskStatus
from core.entries import Entry
from workflows.task import AgentTaskWorkflow

POLL_S = 0.25
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
        self.console.print(text, end="", markup=False, highlight=False)
        self.open_line = True

    def entry(self, entry: Entry, status: TaskStatus) -> None:
        if self.open_line:
            self.console.print()
            self.open_line = False
        render_entry(self.console, entry, text_shown=entry.turn in self.streamed)

    def note(self, text: str) -> None:
        self.console.print(f"[dim]· {text}[/]")

    def retry(self, activity: str, attempt: int, reason: str, next_in_s: float | None) -> None:
        when = f", next try in {next_in_s:.1f}s" if next_in_s is not None else ""
        self.console.print(f"[yellow]↻ {activity} attempt {attempt} failed: {reason}{when}[/]")

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


async def pending_retries(client: Client, workflow_id: str) -> list[tuple[str, int, str, float | None]]:
    """(activity, attempt, last failure, seconds to next attempt) of retrying activities."""
    desc = await client.get_workflow_handle(workflow_id).describe()
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
        self.live = _local_store()
        self.live_after = 0

    async def run(self, closed_outcome, started: float | None = None) -> TaskOutcome:
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
            self._live_text(page.status.turn)
            await asyncio.sleep(POLL_S)

    async def _show(self, page: EventsPage) -> bool:
        """Show new entries; ask a person if the task waits. True when it asked."""
        if self.seq < page.base:
            self.sink.note(f"{page.base - self.seq} earlier entries are in earlier runs of this task")
        for entry in page.entries:
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

    def _live_text(self, turn: int) -> None:
        """Streamed model text, read from the context store when the worker shares this host."""
        if self.live is None:
            return
        try:
            rows = self.live.live_read(self.workflow_id, self.live_after)
        except Exception:  # a store being created or migrated by a worker: try again next poll
            return
        for row_id, row_turn, _attempt, text in rows:
            self.live_after = row_id
            if row_turn == turn:
                self.sink.delta(row_turn, text)

    async def _retries(self) -> None:
        now = time.monotonic()
        if now < self.next_describe:
            return
        self.next_describe = now + DESCRIBE_EVERY_S
        try:
            retries = await pending_retries(self.client, self.workflow_id)
        except RPCError:
            return
        for activity, attempt, reason, next_in in retries:
            if (activity, attempt) not in self.retries_seen:
                self.retries_seen.add((activity, attempt))
                self.sink.retry(activity, attempt, reason, next_in)


def _local_store():
    from runtime.store import ContextStore, StoreUnavailable, default_store_path

    try:
        path = default_store_path()
        return ContextStore(path) if path.exists() else None
    except StoreUnavailable:
        return None  # live text is a nicety: the task's entries come from Temporal


async def ask_person(client: Client, workflow_id: str, status: TaskStatus, console, interactive: bool, who: str) -> None:
    """Ask inline for an approval or a reply when a person is at the terminal; else say how."""
    handle = client.get_workflow_handle(workflow_id)
    pending = status.pending_approval
    if pending is not None:
        args = json.dumps(pending.arguments, ensure_ascii=False)
        console.print(f"[bold yellow]? approval needed[/] {pending.tool} {args[:300]} [dim]({pending.danger}: {pending.reason})[/]")
        if not interactive:
            console.print(f"  approve: python starter.py approve {workflow_id}   deny: python starter.py approve {workflow_id} --deny --reason TEXT")
            return
        answer = (await asyncio.to_thread(input, "  approve? [y/N] ")).strip().lower()
        reason = (await asyncio.to_thread(input, "  reason (optional): ")).strip()
        decision = ApprovalDecision(approved=answer in ("y", "yes"), call_id=pending.call_id, reason=reason, decided_by=who)
        try:
            await handle.execute_update(AgentTaskWorkflow.decide, decision)
        except WorkflowUpdateFailedError as err:
            console.print(f"[yellow]· decision not accepted: {getattr(err.cause, 'message', err.cause)}[/]")
    elif status.question is not None:
        console.print(f"[bold yellow]? the task asks:[/] {status.question}")
        if not interactive:
            console.print(f'  reply: python starter.py reply {workflow_id} "TEXT"')
            return
        text = (await asyncio.to_thread(input, "  reply> ")).strip()
        if text:
            from runtime.secrets import SecretStore

            text = SecretStore.from_env().redact(text)
            await handle.signal(AgentTaskWorkflow.interject, Interjection(text=text, sent_by=who))
