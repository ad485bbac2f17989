"""The SQLite context store: one file in WAL mode, the embedded default (``runtime/store.py``
says what a context store is for).

Why a module of its own: the schema, the connection per thread and the repair of a damaged
file are SQLite's alone; the async wrapper and the choice of database stay in
``runtime/store.py``. Several worker processes on one host share the file safely; workers on
several hosts need it on storage they all see (``AGENT_CONTEXT_DB``).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from pathlib import Path

from pydantic import TypeAdapter

from core.entries import Entry, entry_digest
from core.settings import PathSettings, StoreSettings
from core.sqlite_turn import opening_turn
from runtime.logs import get_logger
from runtime.paths import data_dir
from runtime.store_types import FINISHED, StoreUnavailable, checked_range, schema

_ENTRIES = TypeAdapter(list[Entry])

SCHEMA = schema("", "INTEGER PRIMARY KEY AUTOINCREMENT")


def default_store_path(store: StoreSettings, paths: PathSettings) -> Path:
    """The SQLite file: ``AGENT_CONTEXT_DB``, else ``<data dir>/context.db``."""
    configured = store.context_db
    if "://" in configured:
        raise StoreUnavailable(
            f"AGENT_CONTEXT_DB: a {configured.split('://', 1)[0]}:// store is not supported; "
            "give a postgresql:// URL or a SQLite file path"
        )
    return Path(configured) if configured else data_dir(paths) / "context.db"


class ContextStore:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
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
        with opening_turn(self.path), self._conn() as conn:
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

    def put_new(self, context_id: str, entries: list[Entry]) -> list[str]:
        """Write entries only at seqs that hold none (the rest are left as they are); returns the
        digests the seqs then hold."""
        return self._write(context_id, entries, verb="IGNORE")

    def finish_call(self, context_id: str, entries: list[Entry], call_key: str, body: str) -> list[str]:
        """A tool call's result entries (as ``put_new``: a call cancelled meanwhile never replaces
        what the workflow put there) and its finished record (``body``: the result as JSON), in one
        transaction: a retry finds both or neither. Returns the digests the seqs then hold."""
        return self._write(context_id, entries, (context_id, call_key, FINISHED, body), verb="IGNORE")

    def _write(self, context_id: str, entries: list[Entry], call: tuple[str, str, str, str] | None = None,
               verb: str = "REPLACE") -> list[str]:
        rows = [(context_id, e.seq, entry_digest(e), e.model_dump_json()) for e in entries]
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(f"INSERT OR {verb} INTO entries VALUES (?, ?, ?, ?)", rows)
            if call is not None:
                conn.execute("INSERT OR REPLACE INTO tool_calls VALUES (?, ?, ?, ?)", call)
            if verb == "REPLACE":
                return [row[2] for row in rows]
            held = dict(conn.execute(f"SELECT seq, digest FROM entries WHERE context_id = ? AND seq IN "
                                     f"({','.join('?' * len(rows))})", (context_id, *(row[1] for row in rows))))
        return [held[row[1]] for row in rows]

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

