"""What every context store shares, whichever database holds it: the async ``Store`` interface
the activities use, the two errors, the check that a range of entries is whole, and the
names of a tool call's recorded states.

Why a module of its own: the SQLite store (``runtime/sqlite_store.py``), the Postgres store
(``runtime/pg_store.py``) and the wrapper that opens one (``runtime/store.py``) all need these,
and none of them should import another's internals.
"""

from __future__ import annotations

from typing import LiteralString, Protocol

from pydantic import TypeAdapter

from core.entries import Entry

_ENTRY = TypeAdapter(Entry)


def schema(prefix: LiteralString, serial: LiteralString) -> LiteralString:
    """The store's tables, one definition for both databases: SQLite's own file names them
    plainly; a PostgreSQL database, shared with other applications, with ``prefix``
    (``agent_``). ``serial``: the finished-order key, as each database says it."""
    return f"""
CREATE TABLE IF NOT EXISTS {prefix}entries (
    context_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    digest TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (context_id, seq)
);
CREATE TABLE IF NOT EXISTS {prefix}prefixes (
    context_id TEXT PRIMARY KEY,
    base INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS {prefix}blobs (
    digest TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS {prefix}sessions (
    name TEXT NOT NULL,
    context_id TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    status TEXT NOT NULL,
    final_text TEXT NOT NULL DEFAULT '',
    total INTEGER NOT NULL,
    finished_seq {serial}
);
CREATE TABLE IF NOT EXISTS {prefix}tool_calls (
    context_id TEXT NOT NULL,
    call_key TEXT NOT NULL,
    state TEXT NOT NULL,
    body TEXT,
    PRIMARY KEY (context_id, call_key)
);
"""
# A tool call's record (table tool_calls): started, or finished with its result.
STARTED, FINISHED = "started", "finished"


def checked_range(
    have: dict[int, tuple[str, str]], start: int, end: int, expect: dict[int, str] | None
) -> list[tuple[str, Entry]]:
    """(digest, entry) for seqs start..end-1 from rows read as seq -> (digest, body), whatever
    the database; ContextGap when one is missing or its digest is not the one expected."""
    missing = [seq for seq in range(start, end) if seq not in have]
    mismatched = [seq for seq, digest in (expect or {}).items() if seq in have and have[seq][0] != digest]
    if missing or mismatched:
        raise ContextGap(missing, mismatched)
    return [(have[seq][0], _ENTRY.validate_json(have[seq][1])) for seq in range(start, end)]


class StoreUnavailable(Exception):
    """The store cannot be used at all (a path that cannot be written, an unknown URL): the
    worker refuses to start with this one line instead of failing tasks later."""


class ContextGap(Exception):
    def __init__(self, missing: list[int], mismatched: list[int]) -> None:
        self.missing, self.mismatched = missing, mismatched
        super().__init__(f"context store is missing seqs {missing[:10]} and has stale seqs {mismatched[:10]}")


class Store(Protocol):
    """What the activities need of a context store, whichever database holds it."""

    async def put(self, context_id: str, entries: list[Entry]) -> None: ...
    async def put_new(self, context_id: str, entries: list[Entry]) -> list[str]:
        """Entries only at seqs that hold none; the digests the seqs then hold (another's where
        one was there: what the workflow wrote is never replaced by a call it cancelled)."""
        ...

    async def load(self, context_id: str, total: int, expect: dict[int, str] | None = None) -> list[Entry]: ...
    async def load_range(
        self, context_id: str, start: int, end: int, expect: dict[int, str] | None = None
    ) -> list[tuple[str, Entry]]: ...
    async def put_prefix(self, context_id: str, base: int, prefix: list[Entry]) -> None: ...
    async def get_prefix(self, context_id: str) -> tuple[int, list[Entry]] | None: ...
    async def put_blob(self, text: str) -> str: ...
    async def get_blob(self, digest: str) -> str | None: ...
    async def record_session_task(
        self, name: str, context_id: str, workflow_id: str, status: str, final_text: str, total: int
    ) -> None: ...
    async def session_tasks(self, name: str) -> list[tuple[str, str, str, str, int]]: ...
    async def put_call(self, context_id: str, call_key: str, state: str, body: str | None = None) -> None: ...
    async def finish_call(self, context_id: str, entries: list[Entry], call_key: str, body: str) -> list[str]:
        """A tool call's result entries (as ``put_new``) and its finished record, in one
        transaction; the digests the seqs then hold."""
        ...

    async def get_call(self, context_id: str, call_key: str) -> tuple[str, str | None] | None: ...
    async def check(self) -> None: ...
    async def close(self) -> None: ...
