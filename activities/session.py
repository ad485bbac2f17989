"""Sessions (seed 000's SessionContext across tasks): a task started with ``--session NAME``
begins with the compacted history of the session's earlier tasks.

Each earlier task becomes one visible SystemReminder entry: the request, one
compact line per tool call (tool name, key arguments, outcome), and the
result. Compact lines rather than summaries written by a model, as seed 000
argues: the model can re-read anything it needs.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from temporalio import activity

from contracts.activities import LOAD_SESSION_ACTIVITY, RECORD_SESSION_ACTIVITY, SessionRecord
from core.entries import Entry, SystemReminder, ToolCall, ToolResult, UserMessage
from runtime.store import ContextGap, ContextStore, Store, as_store
from tools.registry import compact_line

MAX_TASKS = 20
MAX_TEXT = 2000


def render_previous_task(workflow_id: str, status: str, final_text: str, entries: list[Entry]) -> str:
    results = {e.call_id: e.status for e in entries if isinstance(e, ToolResult)}
    lines = [f"<previous_task id={quoteattr(workflow_id)} status={quoteattr(status)}>"]
    for entry in entries:
        if isinstance(entry, UserMessage):
            lines.append(f"<user>{escape(entry.text[:MAX_TEXT])}</user>")
        elif isinstance(entry, ToolCall) and entry.calls:
            call = entry.calls[0]
            lines.append(compact_line(call.name, call.arguments, results.get(call.id)))
    lines.append(f"<result>{escape(final_text[:MAX_TEXT])}</result>")
    lines.append("</previous_task>")
    return "\n".join(lines)


class SessionActivities:
    def __init__(self, store: Store | ContextStore) -> None:
        self.store = as_store(store)

    @activity.defn(name=LOAD_SESSION_ACTIVITY)
    async def load_session(self, name: str) -> list[Entry]:
        history: list[Entry] = []
        for context_id, workflow_id, status, final_text, total in (await self.store.session_tasks(name))[-MAX_TASKS:]:
            try:
                entries = await self.store.load(context_id, total)
            except ContextGap:
                entries = []  # the record survives even if the entries were lost
            text = render_previous_task(workflow_id, status, final_text, entries)
            history.append(SystemReminder(text=f"Earlier in session {name!r}:\n{text}", reason="session_history"))
        return history

    @activity.defn(name=RECORD_SESSION_ACTIVITY)
    async def record_session(self, record: SessionRecord) -> None:
        if record.new_entries:
            await self.store.put(record.context_id, record.new_entries)
        await self.store.record_session_task(
            record.session, record.context_id, record.workflow_id, record.status, record.final_text, record.total
        )
