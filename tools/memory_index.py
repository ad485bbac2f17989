"""``memory`` search: the lines of MEMORY.md and memory/*.md, ranked, from an index that is a cache.

The index is SQLite (FTS5, BM25 ranking, Porter stemming), one file per workspace under the
worker's data directory (``<data dir>/memory-index/``, set by ``configure``): outside the
workspace and hidden from commands, so the model can neither read nor change it, and deleting
it (or a damaged one, which is moved out of the way) loses nothing. Each search first brings
it up to date: a file whose size or mtime changed is read again and re-indexed only when its
digest changed, a file gone is dropped. Unconfigured (no worker), it is built in memory.

With an embeddings endpoint (``MemorySettings``), each line's vector is cached in the same file
by the digest of its text, so a line is sent once whatever file it moves to; the query's
nearest lines (cosine) merge with the BM25 ranking by reciprocal rank fusion. An endpoint that
fails leaves the full-text ranking, and the result says so in one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import sqlite3
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from core.settings import MemorySettings
from core.sqlite_turn import opening_turn
from tools.beneath import DIR_FLAGS, Refused, open_at
from tools.memory_embeddings import RANKED, EmbeddingsError, nearest

MEMORY_FILE = "MEMORY.md"
NOTES_DIR = "memory"
HEADER = (  # what the memory tool writes atop a new MEMORY.md: never indexed
    "# Memory\n\n"
    "Stable facts about this workspace and its user, one per line. Kept by the agent's\n"
    "`memory` tool; edit freely.\n\n"
)
MAX_HITS = 10
MAX_FILE_BYTES = 4_000_000  # of one file, indexed (a daily note holds a few KB)
RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al.)
SCHEMA_VERSION = 1
_DAILY = re.compile(r"(\d{4}-\d{2}-\d{2})\.md")
_WORD = re.compile(r"\w+")
_SKIPPED = frozenset(line.strip() for line in HEADER.splitlines())
_SCHEMA = """
CREATE TABLE files (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, digest TEXT);
CREATE TABLE lines (id INTEGER PRIMARY KEY, path TEXT, line INTEGER, date TEXT, text TEXT, digest TEXT);
CREATE INDEX lines_path ON lines(path);
CREATE INDEX lines_digest ON lines(digest);
CREATE VIRTUAL TABLE lines_fts USING fts5(text, content='lines', content_rowid='id',
                                          tokenize='porter unicode61 remove_diacritics 2');
CREATE TABLE vectors (model TEXT, digest TEXT, vector BLOB, PRIMARY KEY (digest, model))
"""


@dataclass(frozen=True)
class Hit:
    path: str  # as the file tool names it: MEMORY.md, memory/2025-03-14.md
    line: int
    date: str  # a daily note's day, else the file's modification day (local time)
    text: str


@dataclass(frozen=True)
class Found:
    hits: list[Hit]
    ranking: str  # how they were ranked, for the result's first line
    problem: str = ""  # why the semantic ranking is missing, when one is configured


async def search(workspace: Path, query: str, settings: MemorySettings, index_dir: Path | None) -> Found:
    """The lines best matching ``query``, best first (Refused or OSError when the files cannot be
    read). ``settings``: the embeddings endpoint; ``index_dir``: where the index lives (None: in
    memory, for this search only)."""
    db = await asyncio.to_thread(_opened, workspace, index_dir)
    try:
        ranked = [await asyncio.to_thread(_bm25, db, query)]
        ranking, problem = "full text, BM25", ""
        if settings.embeddings_url:
            try:
                ranked.append(await nearest(db, query, settings))
                ranking = "full text and meaning, merged"
            except EmbeddingsError as exc:
                problem = f"Semantic ranking is unavailable ({exc}); these are ranked by full text only."
        return Found(await asyncio.to_thread(_hits, db, _fused(ranked)), ranking, problem)
    finally:
        db.close()


# --- the index file -----------------------------------------------------------


def _index_path(index_dir: Path, workspace: Path) -> Path:
    key = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:24]
    return index_dir / f"{key}.sqlite"


def _opened(workspace: Path, index_dir: Path | None) -> sqlite3.Connection:
    """The workspace's index, brought up to date; a damaged file is moved aside and rebuilt."""
    path = ":memory:" if index_dir is None else _index_path(index_dir, workspace)
    if index_dir is not None:
        index_dir.mkdir(parents=True, exist_ok=True)
    try:
        db = _connect(path)
    except sqlite3.DatabaseError as err:
        _unless_damaged(err)
        db = _connect(_moved_aside(Path(path)))
    try:
        _refresh(db, workspace)
    except sqlite3.DatabaseError as err:
        db.close()
        if path == ":memory:":
            raise
        _unless_damaged(err)
        db = _connect(_moved_aside(Path(path)))
        _refresh(db, workspace)
    return db


def _unless_damaged(err: sqlite3.DatabaseError) -> None:
    """Raise ``err`` again unless it says the file is damaged: a busy or locked index (another
    search at the same moment) is not moved aside under the searches that hold it open."""
    if isinstance(err, sqlite3.OperationalError):
        raise err


def _connect(path: str | Path) -> sqlite3.Connection:
    """The index opened, its schema made and WAL on; openers of one file take turns."""
    with opening_turn(path):
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
        try:
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                db.execute("BEGIN IMMEDIATE")
                for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").fetchall():
                    if not name.startswith("lines_fts_"):
                        db.execute(f'DROP TABLE IF EXISTS "{name}"')
                for statement in [*_SCHEMA.split(";"), f"PRAGMA user_version = {SCHEMA_VERSION}"]:
                    db.execute(statement)  # one by one: executescript would commit the transaction
                db.execute("COMMIT")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = OFF")  # a cache: a crash may lose or damage it, and it is rebuilt
        except BaseException:
            db.close()
            raise
    return db


def _moved_aside(path: Path) -> Path:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{path}{suffix}", f"{path}.corrupt{suffix}")
    return path


# --- bringing it up to date ---------------------------------------------------


def _refresh(db: sqlite3.Connection, workspace: Path) -> None:
    known = {p: (m, s) for p, m, s in db.execute("SELECT path, mtime_ns, size FROM files")}
    if {p: (st.st_mtime_ns, st.st_size) for p, st in _listing(workspace).items()} == known:
        return
    db.execute("BEGIN IMMEDIATE")  # one process updates at a time; the others then find it done
    try:
        files = _listing(workspace)
        known_digests = {p: (m, s, d) for p, m, s, d in db.execute("SELECT path, mtime_ns, size, digest FROM files")}
        dropped: set[str] = set()  # digests of the lines taken out: their vectors go unless a line keeps them
        for path in known_digests.keys() - files.keys():
            dropped |= _drop(db, path)
        for path, st in files.items():
            old = known_digests.get(path)
            if old is not None and old[:2] == (st.st_mtime_ns, st.st_size):
                continue
            try:
                data = _read(workspace, path)
            except (FileNotFoundError, Refused):  # gone, or swapped for a symlink, since the listing
                dropped |= _drop(db, path)
                continue
            digest = hashlib.sha256(data).hexdigest()
            if old is not None and old[2] == digest:
                db.execute("UPDATE lines SET date = ? WHERE path = ?", (_date(path, st), path))
            else:
                dropped |= _drop(db, path)
                _add(db, path, _date(path, st), data)
            db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)", (path, st.st_mtime_ns, st.st_size, digest))
        db.executemany("DELETE FROM vectors WHERE digest = ?1 AND NOT EXISTS (SELECT 1 FROM lines WHERE digest = ?1)",
                       [(digest,) for digest in dropped])
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _listing(workspace: Path) -> dict[str, os.stat_result]:
    """MEMORY.md and memory/*.md as regular files (symlinks are not followed), by path."""
    found: dict[str, os.stat_result] = {}
    root = os.open(workspace.resolve(), DIR_FLAGS)
    try:
        with contextlib.suppress(FileNotFoundError):
            st = os.stat(MEMORY_FILE, dir_fd=root, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode):
                found[MEMORY_FILE] = st
        try:
            notes = open_at(root, NOTES_DIR, DIR_FLAGS)
        except (FileNotFoundError, NotADirectoryError, Refused):
            return found
        try:
            for entry in os.scandir(notes):
                if entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
                    found[f"{NOTES_DIR}/{entry.name}"] = entry.stat(follow_symlinks=False)
        finally:
            os.close(notes)
    finally:
        os.close(root)
    return found


def _read(workspace: Path, path: str) -> bytes:
    root = os.open(workspace.resolve(), DIR_FLAGS)
    try:
        parent, _, name = path.rpartition("/")
        folder = open_at(root, parent, DIR_FLAGS) if parent else os.dup(root)
        try:
            fd = open_at(folder, name, os.O_RDONLY | os.O_NONBLOCK)
        finally:
            os.close(folder)
    finally:
        os.close(root)
    with os.fdopen(fd, "rb") as f:
        return f.read(MAX_FILE_BYTES)


def _date(path: str, st: os.stat_result) -> str:
    daily = _DAILY.fullmatch(path.rpartition("/")[2])
    if path != MEMORY_FILE and daily:
        return daily.group(1)
    return f"{datetime.fromtimestamp(st.st_mtime):%Y-%m-%d}"


def _add(db: sqlite3.Connection, path: str, date: str, data: bytes) -> None:
    for number, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        text = raw.strip()
        if not text or text.startswith("#") or text in _SKIPPED:
            continue
        digest = hashlib.sha256(text.encode()).hexdigest()
        row = db.execute("INSERT INTO lines (path, line, date, text, digest) VALUES (?, ?, ?, ?, ?)",
                         (path, number, date, text, digest)).lastrowid
        db.execute("INSERT INTO lines_fts (rowid, text) VALUES (?, ?)", (row, text))


def _drop(db: sqlite3.Connection, path: str) -> set[str]:
    """Take the file's lines out; the digests of their texts."""
    digests = {digest for (digest,) in db.execute("SELECT digest FROM lines WHERE path = ?", (path,))}
    db.execute("INSERT INTO lines_fts (lines_fts, rowid, text) SELECT 'delete', id, text FROM lines WHERE path = ?",
               (path,))
    db.execute("DELETE FROM lines WHERE path = ?", (path,))
    db.execute("DELETE FROM files WHERE path = ?", (path,))
    return digests


# --- ranking ------------------------------------------------------------------


def _bm25(db: sqlite3.Connection, query: str) -> list[int]:
    """Ids of the lines holding any word of ``query``, best first."""
    words = list(dict.fromkeys(_WORD.findall(query.casefold())))[:32]
    if not words:
        return []
    match = " OR ".join(f'"{word}"' for word in words)
    rows = db.execute("SELECT rowid FROM lines_fts WHERE lines_fts MATCH ? ORDER BY bm25(lines_fts) LIMIT ?",
                      (match, RANKED))
    return [row for (row,) in rows]


def _fused(rankings: list[list[int]]) -> list[int]:
    """Reciprocal rank fusion: each ranking gives a line 1/(k + rank); best total first."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking, 1):
            score[row] = score.get(row, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(score, key=lambda row: (-score[row], row))[:MAX_HITS]


def _hits(db: sqlite3.Connection, rows: list[int]) -> list[Hit]:
    if not rows:
        return []
    marks = ",".join("?" * len(rows))
    found = {row[0]: Hit(*row[1:]) for row in db.execute(
        f"SELECT id, path, line, date, text FROM lines WHERE id IN ({marks})", rows)}
    return [found[row] for row in rows if row in found]
