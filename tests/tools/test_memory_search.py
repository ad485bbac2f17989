"""``memory`` search: ranked lines with their file and date, from an index that is only a cache,
merged with an embeddings endpoint's ranking when there is one (the local fake in fakes/)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import pytest

from core.cache import BoundedCache
from core.settings import MemorySettings
from fakes.embeddings import EmbeddingsServer
from tests.configured import settings
from tools import classify_call, execute, memory, memory_embeddings, memory_index
from tools.base import Danger, ToolContext, ToolOutcome
from tools.memory_index import HEADER
from tools.registry import is_idempotent

MODEL = "embed-test"


# What the worker hands the tool: its memory settings and its index folder (None: in memory).
_CURRENT: dict = {"memory": MemorySettings(), "index_dir": None}


def _use(memory_settings: MemorySettings, index_dir: Path | None) -> None:
    _CURRENT.update(memory=memory_settings, index_dir=index_dir)


@pytest.fixture(autouse=True)
def _a_new_worker() -> None:
    _use(MemorySettings(), None)


async def _memory(ws: Path, **arguments) -> ToolOutcome:
    config = dataclasses.replace(settings(), memory=_CURRENT["memory"])
    return await execute("memory", arguments, ToolContext(workspace=ws, settings=config, index_dir=_CURRENT["index_dir"]))


async def _search(ws: Path, query: str) -> list[str]:
    """The result's lines: the head, then (when it says why) the fallback, then one per hit."""
    result = await _memory(ws, action="search", query=query)
    assert result.status == "ok", result.content
    return result.content.splitlines()


def _hits(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("- ")]


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    _use(MemorySettings(), tmp_path / "index")  # the worker's data dir, here
    return tmp_path / "index"


@pytest.fixture
def notes(workspace: Path, index_dir: Path) -> Path:
    """A MEMORY.md last changed on 2025-03-20 and two daily notes."""
    (workspace / "MEMORY.md").write_text(
        HEADER + "- The staging host is stg-01.\n- Tests run with make test.\n- The user is Ada.\n")
    stamp = datetime(2025, 3, 20, 12, 0).timestamp()
    os.utime(workspace / "MEMORY.md", (stamp, stamp))
    (workspace / "memory").mkdir()
    (workspace / "memory" / "2025-03-14.md").write_text(
        "# Notes 2025-03-14\n\n- 09:26:53 Deployed the release to the staging servers.\n- 10:02:11 Lunch.\n")
    (workspace / "memory" / "2025-03-15.md").write_text(
        "# Notes 2025-03-15\n\n- 08:00:00 The nightly backup failed: disk full on the backup host.\n")
    return workspace


@pytest.fixture
def embeddings(index_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingsServer]:
    monkeypatch.setattr(memory_embeddings, "_VECTORS", BoundedCache(1000))  # as in a new worker process
    with EmbeddingsServer(synonyms={"automobile": "car"}) as server:
        _use(MemorySettings(embeddings_url=server.url, embeddings_model=MODEL), index_dir)
        yield server


def _ids(index_dir: Path, path: str) -> list[int]:
    (index,) = index_dir.glob("*.sqlite")
    with sqlite3.connect(index) as db:
        return [row for (row,) in db.execute("SELECT id FROM lines WHERE path = ? ORDER BY line", (path,))]


# --- full text ----------------------------------------------------------------------


async def test_search_results_carry_their_file_line_and_date(notes):
    lines = await _search(notes, "staging host")
    assert lines[0] == "Memory search 'staging host': 3 lines, best first (full text, BM25)."
    hits = _hits(lines)
    assert hits[0] == "- MEMORY.md:6 (2025-03-20) The staging host is stg-01."  # both words: first
    assert sorted(hits[1:]) == [
        "- memory/2025-03-14.md:3 (2025-03-14) 09:26:53 Deployed the release to the staging servers.",
        "- memory/2025-03-15.md:3 (2025-03-15) 08:00:00 The nightly backup failed: disk full on the backup host.",
    ]


async def test_search_matches_other_forms_of_a_word_and_ignores_headers(notes):
    assert _hits(await _search(notes, "deploys")) == [
        "- memory/2025-03-14.md:3 (2025-03-14) 09:26:53 Deployed the release to the staging servers."]
    assert "no line of MEMORY.md or memory/*.md matches" in (await _search(notes, "stable facts notes memory"))[0]


async def test_search_without_any_memory_finds_nothing(workspace, index_dir):
    lines = await _search(workspace, "anything")
    assert lines == ["Memory search 'anything': no line of MEMORY.md or memory/*.md matches (full text, BM25)."]


async def test_search_sees_what_changed_since_the_last_search(notes, clock):
    assert _hits(await _search(notes, "kubernetes")) == []
    await _memory(notes, action="note", note="Moved the cluster to Kubernetes.")
    await _memory(notes, action="revise", old="The user is Ada.", new="The user is Grace.")
    (notes / "memory" / "2025-03-15.md").unlink()
    assert _hits(await _search(notes, "kubernetes")) == [
        "- memory/2025-03-14.md:5 (2025-03-14) 09:26:53 Moved the cluster to Kubernetes."]
    assert [hit.split(") ", 1)[1] for hit in _hits(await _search(notes, "user ada grace"))] == ["The user is Grace."]
    assert _hits(await _search(notes, "backup")) == []


async def test_search_reindexes_only_a_file_whose_content_changed(notes, index_dir):
    await _search(notes, "staging")
    before = _ids(index_dir, "memory/2025-03-14.md"), _ids(index_dir, "MEMORY.md")
    os.utime(notes / "memory" / "2025-03-14.md")  # touched, the same bytes
    with (notes / "MEMORY.md").open("a") as f:
        f.write("- Deploys need a ticket.\n")
    await _search(notes, "staging")
    assert _ids(index_dir, "memory/2025-03-14.md") == before[0]
    assert _ids(index_dir, "MEMORY.md") != before[1] and len(_ids(index_dir, "MEMORY.md")) == 4


async def test_searches_at_once_share_one_index(notes, index_dir, embeddings):
    results = await asyncio.gather(*(_search(notes, "backup host") for _ in range(4)))
    assert all(result == results[0] for result in results) and "backup host" in _hits(results[0])[0]
    assert len(list(index_dir.glob("*.sqlite"))) == 1


def test_workers_opening_a_new_index_at_once_all_get_it(notes, tmp_path):
    """Four openers of a file no one made yet, a hundred times over: none is told the database is
    locked (two switching it to WAL at once each held the other off, about one round in twenty)."""
    def opened(index_dir: Path) -> list[int]:
        db = memory_index._opened(notes, index_dir)
        try:
            return memory_index._bm25(db, "backup host")
        finally:
            db.close()

    with ThreadPoolExecutor(4) as pool:
        for round_ in range(100):
            rankings = list(pool.map(opened, [tmp_path / f"index-{round_}"] * 4))
            assert rankings[0] and all(ranking == rankings[0] for ranking in rankings)


async def test_a_deleted_index_is_rebuilt_by_the_next_search(notes, index_dir):
    first = await _search(notes, "backup host")
    (index,) = index_dir.glob("*.sqlite")
    for path in index_dir.iterdir():
        path.unlink()
    assert await _search(notes, "backup host") == first
    assert index.is_file()


async def test_a_damaged_index_is_moved_aside_and_rebuilt(notes, index_dir):
    first = await _search(notes, "backup host")
    (index,) = index_dir.glob("*.sqlite")
    for path in index_dir.iterdir():
        path.unlink()
    index.write_bytes(b"not a database at all" * 100)
    assert await _search(notes, "backup host") == first
    assert index.with_name(index.name + ".corrupt").read_bytes().startswith(b"not a database")


async def test_the_index_lives_outside_the_workspace(notes, index_dir):
    await _search(notes, "staging")
    assert sorted(p.name for p in notes.rglob("*")) == ["2025-03-14.md", "2025-03-15.md", "MEMORY.md", "memory"]
    assert [p.suffix for p in index_dir.iterdir() if p.suffix == ".sqlite"] == [".sqlite"]


async def test_without_a_configured_index_the_search_builds_one_in_memory(notes, tmp_path):
    _use(MemorySettings(), None)
    assert len(_hits(await _search(notes, "staging host"))) == 3
    assert not list(tmp_path.rglob("*.sqlite"))


async def test_search_does_not_follow_symlinks_out_of_the_workspace(workspace, index_dir, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "2025-01-01.md").write_text("- the launch codes are 1234\n")
    (outside / "MEMORY.md").write_text("- the launch codes are 1234\n")
    (workspace / "memory").symlink_to(outside)
    (workspace / "MEMORY.md").symlink_to(outside / "MEMORY.md")
    assert _hits(await _search(workspace, "launch codes")) == []


async def test_search_is_safe_idempotent_and_needs_a_query(workspace):
    assert classify_call("memory", {"action": "search", "query": "x"})[0] is Danger.SAFE
    assert is_idempotent("memory", {"action": "search", "query": "x"})
    result = await _memory(workspace, action="search")
    assert result.status == "retry" and "needs query" in result.content


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "now", lambda: datetime(2025, 3, 14, 9, 26, 53))


# --- with an embeddings endpoint ---------------------------------------------------------


async def test_search_merges_a_match_by_meaning_that_full_text_misses(notes, embeddings):
    (notes / "memory" / "2025-03-16.md").write_text("- 11:00:00 The car is parked in bay 4.\n"
                                                    "- 11:05:00 Automobile insurance renewed.\n")
    lines = await _search(notes, "automobile")
    assert lines[0].endswith("(full text and meaning, merged).")
    assert _hits(lines)[:2] == [
        "- memory/2025-03-16.md:2 (2025-03-16) 11:05:00 Automobile insurance renewed.",  # both rankings
        "- memory/2025-03-16.md:1 (2025-03-16) 11:00:00 The car is parked in bay 4.",  # by meaning only
    ]
    _use(MemorySettings(), _CURRENT["index_dir"])
    assert len(_hits(await _search(notes, "automobile"))) == 1  # full text alone


async def test_vectors_are_asked_for_once_per_distinct_text(notes, embeddings, clock):
    await _search(notes, "staging")
    indexed = {"- The staging host is stg-01.", "- Tests run with make test.", "- The user is Ada.",
               "- 09:26:53 Deployed the release to the staging servers.", "- 10:02:11 Lunch.",
               "- 08:00:00 The nightly backup failed: disk full on the backup host."}
    assert sorted(embeddings.inputs) == sorted([*indexed, "staging"])
    embeddings.inputs.clear()
    await _search(notes, "backup")
    assert embeddings.inputs == ["backup"]  # the lines' vectors come from the index
    embeddings.inputs.clear()
    (notes / "memory" / "2025-03-16.md").write_text("- 10:02:11 Lunch.\n- Bought a new disk.\n")
    await _memory(notes, action="append", fact="The user is Ada.")  # already there: nothing changes
    await _search(notes, "disk")
    assert embeddings.inputs == ["- Bought a new disk.", "disk"]  # Lunch's text has its vector already
    assert all(body["model"] == MODEL for body in embeddings.requests)


async def test_the_index_drops_the_vectors_of_texts_no_file_holds_any_more(notes, embeddings, index_dir):
    (notes / "memory" / "2025-03-16.md").write_text("- 10:02:11 Lunch.\n- Bought a new disk.\n")
    await _search(notes, "disk")
    (notes / "memory" / "2025-03-16.md").unlink()
    await _search(notes, "disk")
    (index,) = index_dir.glob("*.sqlite")
    with sqlite3.connect(index) as db:
        kept = {text for (text,) in db.execute(
            "SELECT l.text FROM vectors v JOIN lines l ON l.digest = v.digest")}
        assert db.execute("SELECT count(*) FROM vectors").fetchone() == (6,)
    assert "- 10:02:11 Lunch." in kept and "- Bought a new disk." not in kept  # Lunch is in 2025-03-14.md too


@pytest.mark.parametrize("broken, why", [
    ("down", "the embeddings endpoint could not be reached (ConnectError)"),
    ("status", "the embeddings endpoint answered HTTP 503: scripted failure 503"),
    ("model", "the embeddings endpoint answered HTTP 404: The model `no-such-model` does not exist"),
])  # fmt: skip
async def test_an_endpoint_that_fails_leaves_the_full_text_ranking_and_says_why(notes, embeddings, broken, why):
    settings = MemorySettings(embeddings_url=embeddings.url, embeddings_model=MODEL)
    if broken == "down":
        embeddings.stop()
    elif broken == "status":
        embeddings.status = 503
    else:
        settings = MemorySettings(embeddings_url=settings.embeddings_url, embeddings_model="no-such-model")
    _use(settings, _CURRENT["index_dir"])
    lines = await _search(notes, "staging host")
    assert lines[0].endswith("(full text, BM25).")
    assert lines[1] == f"Semantic ranking is unavailable ({why}); these are ranked by full text only."
    assert _hits(lines)[0] == "- MEMORY.md:6 (2025-03-20) The staging host is stg-01."


async def test_the_key_goes_as_a_bearer_token_and_never_into_the_result(notes, index_dir):
    with EmbeddingsServer(api_key="sk-embed-right-key") as server:
        right = MemorySettings(embeddings_url=server.url, embeddings_model=MODEL, embeddings_api_key="sk-embed-right-key")
        _use(right, index_dir)
        assert (await _search(notes, "staging"))[0].endswith("(full text and meaning, merged).")
        wrong = MemorySettings(embeddings_url=server.url, embeddings_model=MODEL, embeddings_api_key="sk-wrong")
        _use(wrong, index_dir)
        lines = await _search(notes, "staging")
    assert "HTTP 401" in lines[1] and "sk-" not in "\n".join(lines)
