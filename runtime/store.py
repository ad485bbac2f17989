"""The context store: where activities keep a task's entries so the history need not.

Why: Temporal records every activity input. Sending the whole transcript to
each LLM call makes the history grow with the square of the conversation.
Instead the LLM activity receives only what is new since its last call and
rebuilds the rest from here; the tool activity writes its result entry here
itself. Every write is keyed by (context id, seq) and replaces, so a retried
activity (after a worker crash between the write and its completion) can
never duplicate an entry. Each entry carries the digest the workflow expects,
so a stale write is detected, not trusted: a mismatch or a missing entry is a
gap, and the workflow resends in full.

Large tool outputs are stored once as content-addressed blobs; the history
keeps a preview and the digest.

SQLite in WAL mode (one file in the data directory) is the embedded default:
several worker processes on one host share it safely. Workers on several
hosts need the file on storage they all see (``AGENT_CONTEXT_DB``).
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Protocol

from pydantic import TypeAdapter

from core.entries import Entry, entry_digest
from core.settings import PathSettings, StoreSettings
from runtime.logs import get_logger
from runtime.paths import data_dir
from runtime.settings import from_process

_ENTRY = TypeAdapter(Entry)
_ENTRIES = TypeAdapter(list[Entry])
# A tool call's record (table tool_calls): started, or finished with its result.
STARTED, FINISHED = "started", "finished"

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    context_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    digest TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (context_id, seq)
);
CREATE TABLE IF NOT EXISTS prefixes (
    context_id TEXT PRIMARY KEY,
    base INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS blobs (
    digest TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    name TEXT NOT NULL,
    context_id TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    status TEXT NOT NULL,
    final_text TEXT NOT NULL DEFAULT '',
    total INTEGER NOT NULL,
    finished_seq INTEGER PRIMARY KEY AUTOINCREMENT
);
CREATE TABLE IF NOT EXISTS tool_calls (
    context_id TEXT NOT NULL,
    call_key TEXT NOT NULL,
    state TEXT NOT NULL,
    body TEXT,
    PRIMARY KEY (context_id, call_key)
);
"""


def default_store_path(store: StoreSettings | None = None, paths: PathSettings | None = None) -> Path:
    """The SQLite file: ``AGENT_CONTEXT_DB``, else ``<data dir>/context.db``. None: this
    process's environment, for callers not yet handed their settings."""
    configured = (from_process(StoreSettings) if store is None else store).context_db
    if "://" in configured:
        raise StoreUnavailable(
            f"AGENT_CONTEXT_DB: a {configured.split('://', 1)[0]}:// store is not supported; "
            "give a postgresql:// URL or a SQLite file path"
        )
    return Path(configured) if configured else data_dir(paths) / "context.db"


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


class ContextStore:
    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else default_store_path()
        self._local = threading.local()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._open()
        except sqlite3.DatabaseError as err:
            if not self._is_corrupt(err):
                raise StoreUnavailable(f"context store {self.path} cannot be opened: {err}") from None
            self._move_aside(err)
            self._open()
        except (OSError, sqlite3.Error) as err:
            raise StoreUnavailable(f"context store {self.path} cannot be opened: {err}") from None

    def _open(self) -> None:
        with self._conn() as conn:
            conn.executescript(SCHEMA)
            conn.execute("SELECT COUNT(*) FROM entries").fetchone()

    @staticmethod
    def _is_corrupt(err: sqlite3.DatabaseError) -> bool:
        text = str(err).lower()
        return "not a database" in text or "malformed" in text or "corrupt" in text

    def _move_aside(self, err: sqlite3.DatabaseError) -> None:
        """A damaged file is only a cache: keep it for inspection, start an empty one."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
        stamp = time.strftime("%Y%m%dT%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.rename(Path(f"{aside}{suffix}"))
        get_logger(component="context_store").warning("context store damaged: moved aside and rebuilt; tasks resend their context once",
                    path=str(self.path), moved_to=str(aside), error=str(err))

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    # ---- entries ---------------------------------------------------------------

    def put(self, context_id: str, entries: list[Entry]) -> list[str]:
        """Write (or replace) entries; returns their digests."""
        return self._write(context_id, entries)

    def finish_call(self, context_id: str, entries: list[Entry], call_key: str, body: str) -> list[str]:
        """A tool call's result entries and its finished record (``body``: the result as JSON),
        in one transaction: a retry finds both or neither. Returns the entries' digests."""
        return self._write(context_id, entries, (context_id, call_key, FINISHED, body))

    def _write(self, context_id: str, entries: list[Entry], call: tuple[str, str, str, str] | None = None) -> list[str]:
        rows = [(context_id, e.seq, entry_digest(e), e.model_dump_json()) for e in entries]
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)", rows)
            if call is not None:
                conn.execute("INSERT OR REPLACE INTO tool_calls VALUES (?, ?, ?, ?)", call)
        return [row[2] for row in rows]

    def load(self, context_id: str, total: int, expect: dict[int, str] | None = None) -> list[Entry]:
        """Entries 0..total-1, checked against the expected digests; ContextGap if not whole."""
        return [entry for _, entry in self.load_range(context_id, 0, total, expect)]

    def load_range(
        self, context_id: str, start: int, end: int, expect: dict[int, str] | None = None
    ) -> list[tuple[str, Entry]]:
        """(digest, entry) for seqs start..end-1; ContextGap if one is missing or stale."""
        rows = self._conn().execute(
            "SELECT seq, digest, body FROM entries WHERE context_id = ? AND seq >= ? AND seq < ? ORDER BY seq",
            (context_id, start, end),
        ).fetchall()
        have = {seq: (digest, body) for seq, digest, body in rows}
        return checked_range(have, start, end, expect)

    def put_prefix(self, context_id: str, base: int, prefix: list[Entry]) -> None:
        """The model's view of the entries before ``base``, from the workflow's history: it stands
        in for those entries when this store does not have them (see ``load_view``)."""
        body = _ENTRIES.dump_json(prefix).decode()
        with self._conn() as conn:
            conn.execute("INSERT OR REPLACE INTO prefixes VALUES (?, ?, ?)", (context_id, base, body))

    def get_prefix(self, context_id: str) -> tuple[int, list[Entry]] | None:
        row = self._conn().execute("SELECT base, body FROM prefixes WHERE context_id = ?", (context_id,)).fetchone()
        return (row[0], _ENTRIES.validate_json(row[1])) if row else None

    def count_all(self) -> int:
        """Entries of every task in this store."""
        (n,) = self._conn().execute("SELECT COUNT(*) FROM entries").fetchone()
        return n

    def count(self, context_id: str) -> int:
        (n,) = self._conn().execute("SELECT COUNT(*) FROM entries WHERE context_id = ?", (context_id,)).fetchone()
        return n

    # ---- blobs -------------------------------------------------------------------

    def put_blob(self, text: str) -> str:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        with self._conn() as conn:
            conn.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?)", (digest, text))
        return digest

    def get_blob(self, digest: str) -> str | None:
        row = self._conn().execute("SELECT body FROM blobs WHERE digest = ?", (digest,)).fetchone()
        return row[0] if row else None

    # ---- tool calls ----------------------------------------------------------------------

    def put_call(self, context_id: str, call_key: str, state: str, body: str | None = None) -> None:
        """Record that a tool call started (``state="started"``) or finished with a result
        (``state="finished"``, the result as JSON), so a retry on any worker can read it."""
        with self._conn() as conn:
            conn.execute("INSERT OR REPLACE INTO tool_calls VALUES (?, ?, ?, ?)", (context_id, call_key, state, body))

    def get_call(self, context_id: str, call_key: str) -> tuple[str, str | None] | None:
        """(state, body) of a recorded tool call, or None if it never started."""
        row = self._conn().execute(
            "SELECT state, body FROM tool_calls WHERE context_id = ? AND call_key = ?", (context_id, call_key)
        ).fetchone()
        return (row[0], row[1]) if row else None

    # ---- sessions ----------------------------------------------------------------------

    def record_session_task(
        self, name: str, context_id: str, workflow_id: str, status: str, final_text: str, total: int
    ) -> None:
        with self._conn() as conn:
            conn.execute(
                "DELETE FROM sessions WHERE name = ? AND context_id = ?", (name, context_id)
            )
            conn.execute(
                "INSERT INTO sessions (name, context_id, workflow_id, status, final_text, total) VALUES (?, ?, ?, ?, ?, ?)",
                (name, context_id, workflow_id, status, final_text, total),
            )

    def session_tasks(self, name: str) -> list[tuple[str, str, str, str, int]]:
        """(context_id, workflow_id, status, final_text, total) of a session's finished tasks, oldest first."""
        return self._conn().execute(
            "SELECT context_id, workflow_id, status, final_text, total FROM sessions WHERE name = ? ORDER BY finished_seq",
            (name,),
        ).fetchall()


class Store(Protocol):
    """What the activities need of a context store, whichever database holds it."""

    async def put(self, context_id: str, entries: list[Entry]) -> None: ...
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
    async def finish_call(self, context_id: str, entries: list[Entry], call_key: str, body: str) -> None: ...
    async def get_call(self, context_id: str, call_key: str) -> tuple[str, str | None] | None: ...
    async def check(self) -> None: ...
    async def close(self) -> None: ...


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

    async def finish_call(self, context_id: str, entries: list[Entry], call_key: str, body: str) -> None:
        digests = await asyncio.to_thread(self.sqlite.finish_call, context_id, entries, call_key, body)
        self.recent.add(context_id, entries, digests)

    async def get_call(self, context_id: str, call_key: str) -> tuple[str, str | None] | None:
        return await asyncio.to_thread(self.sqlite.get_call, context_id, call_key)

    async def check(self) -> None:
        await asyncio.to_thread(self.sqlite.count_all)

    async def close(self) -> None:
        pass


def as_store(store: Store | ContextStore) -> Store:
    return LocalStore(store) if isinstance(store, ContextStore) else store


def open_store(store: StoreSettings | str | None = None, paths: PathSettings | None = None) -> Store:
    """The store ``AGENT_CONTEXT_DB`` names: a ``postgresql://`` URL (one store shared by every
    host), or a SQLite file path (default: ``<data dir>/context.db``, a cache per host).
    None: this process's environment, for callers not yet handed their settings."""
    settings = StoreSettings(context_db=store) if isinstance(store, str) else store
    settings = from_process(StoreSettings) if settings is None else settings
    if settings.context_db.startswith(("postgresql://", "postgres://")):
        from runtime.pg_store import PostgresStore  # psycopg only where Postgres is used

        return PostgresStore(settings.context_db)
    return LocalStore(ContextStore(default_store_path(settings, paths)))
