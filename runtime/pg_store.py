"""The context store on PostgreSQL: one store shared by workers on every host.

Chosen with ``AGENT_CONTEXT_DB=postgresql://user:password@host/db``. Same tables and the
same guarantees as the SQLite store (``runtime/sqlite_store.py``; both meet ``runtime/store_types.py``): writes keyed by (context id,
seq) replace, so a retried activity never duplicates an entry; each entry carries the
digest the workflow expects, so a stale one is a gap, not trusted. It is still only a
faster path to what the history holds: the workflow can rebuild every entry.

psycopg 3, async, with a small connection pool opened on first use in the worker's loop.
"""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool
from pydantic import TypeAdapter

from core.entries import Entry, entry_digest
from runtime.store_types import FINISHED, StoreUnavailable, checked_range, schema

# Writes replace: a retried activity rewrites the same row (but ``put_new`` and ``finish_call`` leave one
# that is there: an activity's late write never replaces what the workflow put).
_PUT_ENTRY = (
    "INSERT INTO agent_entries VALUES (%s, %s, %s, %s) ON CONFLICT (context_id, seq) "
    "DO UPDATE SET digest = EXCLUDED.digest, body = EXCLUDED.body"
)
_PUT_NEW_ENTRY = "INSERT INTO agent_entries VALUES (%s, %s, %s, %s) ON CONFLICT (context_id, seq) DO NOTHING"
_PUT_CALL = (
    "INSERT INTO agent_tool_calls VALUES (%s, %s, %s, %s) ON CONFLICT (context_id, call_key) "
    "DO UPDATE SET state = EXCLUDED.state, body = EXCLUDED.body"
)

_ENTRIES = TypeAdapter(list[Entry])

SCHEMA = schema("agent_", "BIGSERIAL PRIMARY KEY")


class PostgresStore:
    def __init__(self, url: str, *, max_size: int = 10) -> None:
        self.url = url
        self._pool: AsyncConnectionPool[Any] = AsyncConnectionPool(url, min_size=1, max_size=max_size, open=False, kwargs={"autocommit": True})
        self._ready = False

    async def _conn_pool(self) -> AsyncConnectionPool[Any]:
        if not self._ready:
            await self._pool.open(wait=True, timeout=10)
            async with self._pool.connection() as conn:
                await conn.execute(SCHEMA)
            self._ready = True
        return self._pool

    async def check(self) -> None:
        """Connect and create the tables now: a wrong URL or a database that is down stops the
        worker at start with one line, instead of failing tasks later."""
        try:
            conn = await psycopg.AsyncConnection.connect(self.url, connect_timeout=5, autocommit=True)
            async with conn:
                await conn.execute(SCHEMA)
            await self._conn_pool()
        except Exception as err:
            await self.close()
            where = self.url.split("@")[-1]  # never the password
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise StoreUnavailable(f"context store postgresql://…@{where} cannot be used: {first}") from None

    async def close(self) -> None:
        await self._pool.close()
        self._ready = False

    # ---- entries ---------------------------------------------------------------

    async def put(self, context_id: str, entries: list[Entry]) -> None:
        if entries:
            await self._write(context_id, entries)

    async def put_new(self, context_id: str, entries: list[Entry]) -> list[str]:
        return await self._write(context_id, entries, sql=_PUT_NEW_ENTRY)

    async def _write(
        self, context_id: str, entries: list[Entry], call: tuple[str, str, str, str] | None = None,
        sql: str = _PUT_ENTRY,
    ) -> list[str]:
        """Entries (and a tool call's record) in one transaction; the digests the seqs then hold."""
        rows = [(context_id, e.seq, entry_digest(e), e.model_dump_json()) for e in entries]
        async with ((await self._conn_pool()).connection() as conn, conn.transaction(),
                    conn.cursor(row_factory=tuple_row) as cur):
            if rows:
                await cur.executemany(sql, rows)
            if call is not None:
                await cur.execute(_PUT_CALL, call)
            if sql == _PUT_ENTRY:
                return [row[2] for row in rows]
            await cur.execute("SELECT seq, digest FROM agent_entries WHERE context_id = %s AND seq = ANY(%s)",
                              (context_id, [row[1] for row in rows]))
            held = dict(await cur.fetchall())
        return [held[row[1]] for row in rows]

    async def load(self, context_id: str, total: int, expect: dict[int, str] | None = None) -> list[Entry]:
        return [entry for _, entry in await self.load_range(context_id, 0, total, expect)]

    async def load_range(
        self, context_id: str, start: int, end: int, expect: dict[int, str] | None = None
    ) -> list[tuple[str, Entry]]:
        async with (await self._conn_pool()).connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                "SELECT seq, digest, body FROM agent_entries WHERE context_id = %s AND seq >= %s AND seq < %s",
                (context_id, start, end),
            )
            rows = await cur.fetchall()
        have = {seq: (digest, body) for seq, digest, body in rows}
        return checked_range(have, start, end, expect)

    async def put_prefix(self, context_id: str, base: int, prefix: list[Entry]) -> None:
        body = _ENTRIES.dump_json(prefix).decode()
        async with (await self._conn_pool()).connection() as conn:
            await conn.execute(
                "INSERT INTO agent_prefixes VALUES (%s, %s, %s) ON CONFLICT (context_id) "
                "DO UPDATE SET base = EXCLUDED.base, body = EXCLUDED.body",
                (context_id, base, body),
            )

    async def get_prefix(self, context_id: str) -> tuple[int, list[Entry]] | None:
        async with (await self._conn_pool()).connection() as conn:
            cur = await conn.execute("SELECT base, body FROM agent_prefixes WHERE context_id = %s", (context_id,))
            row = await cur.fetchone()
        return (row[0], _ENTRIES.validate_json(row[1])) if row else None

    async def count(self, context_id: str) -> int:
        async with (await self._conn_pool()).connection() as conn:
            cur = await conn.execute("SELECT COUNT(*) FROM agent_entries WHERE context_id = %s", (context_id,))
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    # ---- blobs -------------------------------------------------------------------

    async def put_blob(self, text: str) -> str:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        async with (await self._conn_pool()).connection() as conn:
            await conn.execute(
                "INSERT INTO agent_blobs VALUES (%s, %s) ON CONFLICT (digest) DO NOTHING", (digest, text)
            )
        return digest

    async def get_blob(self, digest: str) -> str | None:
        async with (await self._conn_pool()).connection() as conn:
            cur = await conn.execute("SELECT body FROM agent_blobs WHERE digest = %s", (digest,))
            row = await cur.fetchone()
        return row[0] if row else None

    # ---- tool calls --------------------------------------------------------------

    async def put_call(self, context_id: str, call_key: str, state: str, body: str | None = None) -> None:
        async with (await self._conn_pool()).connection() as conn:
            await conn.execute(_PUT_CALL, (context_id, call_key, state, body))

    async def finish_call(self, context_id: str, entries: list[Entry], call_key: str, body: str) -> list[str]:
        """The result entries, never over another's, and the finished record in one transaction."""
        return await self._write(context_id, entries, (context_id, call_key, FINISHED, body), sql=_PUT_NEW_ENTRY)

    async def get_call(self, context_id: str, call_key: str) -> tuple[str, str | None] | None:
        async with (await self._conn_pool()).connection() as conn:
            cur = await conn.execute(
                "SELECT state, body FROM agent_tool_calls WHERE context_id = %s AND call_key = %s",
                (context_id, call_key),
            )
            row = await cur.fetchone()
        return (row[0], row[1]) if row else None

    # ---- sessions ----------------------------------------------------------------

    async def record_session_task(
        self, name: str, context_id: str, workflow_id: str, status: str, final_text: str, total: int
    ) -> None:
        async with (await self._conn_pool()).connection() as conn, conn.transaction():
            await conn.execute("DELETE FROM agent_sessions WHERE name = %s AND context_id = %s", (name, context_id))
            await conn.execute(
                "INSERT INTO agent_sessions (name, context_id, workflow_id, status, final_text, total) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                (name, context_id, workflow_id, status, final_text, total),
            )

    async def session_tasks(self, name: str) -> list[tuple[str, str, str, str, int]]:
        async with (await self._conn_pool()).connection() as conn:
            cur = await conn.execute(
                "SELECT context_id, workflow_id, status, final_text, total FROM agent_sessions "
                "WHERE name = %s ORDER BY finished_seq",
                (name,),
            )
            return [tuple(row) for row in await cur.fetchall()]  # type: ignore[misc]
