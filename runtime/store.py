"""The context store: where activities keep a task's entries so the history need not.

Why: Temporal records every activity input. Sending the whole transcript to
each LLM call makes the history grow with the square of the conversation.
Instead the LLM activity receives only what is new since its last call and
rebuilds the rest from here; the tool activity writes its result entry here
itself. Every write is keyed by (context id, seq) and replaces, so a retried
activity (after a worker crash between the write and its completion) can
never duplicate an entry; but the reply an LLM call stores ahead of the
workflow (``put_new``) never replaces anything, since the workflow may have
cancelled that call and given its seq to a person's message by the time the
write lands. Each entry carries the digest the workflow expects,
so a stale write is detected, not trusted: a mismatch or a missing entry is a
gap, and the workflow resends in full.

Large tool outputs are stored once as content-addressed blobs; the history
keeps a preview and the digest.

This module is the store the activities see: ``open_store`` picks the database, SQLite
(``runtime/sqlite_store.py``, the embedded default) or Postgres (``runtime/pg_store.py``), and
``LocalStore`` puts the SQLite one behind the async ``Store`` interface
(``runtime/store_types.py``). Its public names are all importable from here.
"""

from __future__ import annotations

import asyncio

from core.entries import Entry, entry_digest
from core.settings import PathSettings, StoreSettings
from runtime.sqlite_store import ContextStore as ContextStore
from runtime.sqlite_store import default_store_path as default_store_path
from runtime.store_types import FINISHED as FINISHED
from runtime.store_types import STARTED as STARTED
from runtime.store_types import ContextGap as ContextGap
from runtime.store_types import Store as Store
from runtime.store_types import StoreUnavailable as StoreUnavailable
from runtime.store_types import checked_range as checked_range


class RecentEntries:
    """The entries this process wrote last, by (context id, seq), with their digests.

    A read that names the digest it expects of every entry it asks for (the workflow's record
    of what the activities wrote) is answered from here without going to the database: a
    digest names the content, so what is kept here cannot be stale for such a read. Any other
    read goes to the database. At most ``limit`` entries, the oldest written dropped first."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._items: dict[tuple[str, int], tuple[str, Entry]] = {}

    def add(self, context_id: str, entries: list[Entry], digests: list[str]) -> None:
        for entry, digest in zip(entries, digests, strict=True):
            key = (context_id, entry.seq)
            self._items.pop(key, None)  # re-inserted: the newest write is the last dropped
            self._items[key] = (digest, entry)
        while len(self._items) > self.limit:
            del self._items[next(iter(self._items))]

    def get(
        self, context_id: str, start: int, end: int, expect: dict[int, str] | None
    ) -> list[tuple[str, Entry]] | None:
        """(digest, entry) for seqs start..end-1 when each is kept with the digest ``expect``
        names; None otherwise (the database answers)."""
        if not expect or end <= start:
            return None
        found = []
        for seq in range(start, end):
            kept = self._items.get((context_id, seq))
            if kept is None or expect.get(seq) != kept[0]:
                return None
            found.append(kept)
        return found


class LocalStore:
    """A ``ContextStore`` (SQLite) behind the async ``Store`` interface: each call runs in a
    worker thread, so a slow disk or a lock held by another process never stalls the
    worker's event loop (and with it every task's heartbeats). A read of entries this process
    wrote, each named by its digest, is answered from memory (``RecentEntries``)."""

    def __init__(self, sqlite: ContextStore) -> None:
        self.sqlite = sqlite
        self.recent = RecentEntries()

    async def put(self, context_id: str, entries: list[Entry]) -> None:
        self.recent.add(context_id, entries, await asyncio.to_thread(self.sqlite.put, context_id, entries))

    async def put_new(self, context_id: str, entries: list[Entry]) -> list[str]:
        return self._kept(context_id, entries, await asyncio.to_thread(self.sqlite.put_new, context_id, entries))

    def _kept(self, context_id: str, entries: list[Entry], held: list[str]) -> list[str]:
        """Of a write that never replaces, what is kept in memory: the entries the database took."""
        took = [(e, digest) for e, digest in zip(entries, held, strict=True) if digest == entry_digest(e)]
        self.recent.add(context_id, [e for e, _ in took], [digest for _, digest in took])
        return held

    async def load(self, context_id: str, total: int, expect: dict[int, str] | None = None) -> list[Entry]:
        return await asyncio.to_thread(self.sqlite.load, context_id, total, expect)

    async def load_range(
        self, context_id: str, start: int, end: int, expect: dict[int, str] | None = None
    ) -> list[tuple[str, Entry]]:
        kept = self.recent.get(context_id, start, end, expect)
        if kept is not None:
            return kept
        return await asyncio.to_thread(self.sqlite.load_range, context_id, start, end, expect)

    async def put_prefix(self, context_id: str, base: int, prefix: list[Entry]) -> None:
        await asyncio.to_thread(self.sqlite.put_prefix, context_id, base, prefix)

    async def get_prefix(self, context_id: str) -> tuple[int, list[Entry]] | None:
        return await asyncio.to_thread(self.sqlite.get_prefix, context_id)

    async def put_blob(self, text: str) -> str:
        return await asyncio.to_thread(self.sqlite.put_blob, text)

    async def get_blob(self, digest: str) -> str | None:
        return await asyncio.to_thread(self.sqlite.get_blob, digest)

    async def record_session_task(
        self, name: str, context_id: str, workflow_id: str, status: str, final_text: str, total: int
    ) -> None:
        await asyncio.to_thread(self.sqlite.record_session_task, name, context_id, workflow_id, status, final_text, total)

    async def session_tasks(self, name: str) -> list[tuple[str, str, str, str, int]]:
        return await asyncio.to_thread(self.sqlite.session_tasks, name)

    async def put_call(self, context_id: str, call_key: str, state: str, body: str | None = None) -> None:
        await asyncio.to_thread(self.sqlite.put_call, context_id, call_key, state, body)

    async def finish_call(self, context_id: str, entries: list[Entry], call_key: str, body: str) -> list[str]:
        held = await asyncio.to_thread(self.sqlite.finish_call, context_id, entries, call_key, body)
        return self._kept(context_id, entries, held)

    async def get_call(self, context_id: str, call_key: str) -> tuple[str, str | None] | None:
        return await asyncio.to_thread(self.sqlite.get_call, context_id, call_key)

    async def check(self) -> None:
        await asyncio.to_thread(self.sqlite.count_all)

    async def close(self) -> None:
        pass


def as_store(store: Store | ContextStore) -> Store:
    return LocalStore(store) if isinstance(store, ContextStore) else store


def open_store(store: StoreSettings | str, paths: PathSettings) -> Store:
    """The store ``AGENT_CONTEXT_DB`` names: a ``postgresql://`` URL (one store shared by every
    host), or a SQLite file path (default: ``<data dir>/context.db``, a cache per host)."""
    settings = StoreSettings(context_db=store) if isinstance(store, str) else store
    if settings.context_db.startswith(("postgresql://", "postgres://")):
        from runtime.pg_store import PostgresStore  # psycopg only where Postgres is used

        return PostgresStore(settings.context_db)
    return LocalStore(ContextStore(default_store_path(settings, paths)))
