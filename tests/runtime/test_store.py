"""The context store on its own: idempotent writes, gap and staleness detection, blobs, live text."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from core.entries import ToolResult, UserMessage, entry_digest
from core.settings import PathSettings, StoreSettings
from runtime.store import (
    ContextGap,
    ContextStore,
    LocalStore,
    RecentEntries,
    StoreUnavailable,
    default_store_path,
    open_store,
)


@pytest.fixture
def store(tmp_path) -> ContextStore:
    return ContextStore(tmp_path / "context.db")


def entries(n: int) -> list:
    return [UserMessage(seq=i, text=f"message {i}") for i in range(n)]


def test_put_then_load_returns_the_entries_in_order(store):
    store.put("c1", entries(3))
    assert [e.text for e in store.load("c1", 3)] == ["message 0", "message 1", "message 2"]
    assert store.count("c1") == 3 and store.count("other") == 0


def test_writing_the_same_seq_again_replaces_it_instead_of_duplicating(store):
    store.put("c1", entries(2))
    store.put("c1", [UserMessage(seq=1, text="retried")])
    assert store.count("c1") == 2
    assert [e.text for e in store.load("c1", 2)] == ["message 0", "retried"]


def test_a_missing_seq_is_a_gap_that_names_it(store):
    store.put("c1", [entries(3)[0], entries(3)[2]])
    with pytest.raises(ContextGap) as gap:
        store.load("c1", 3)
    assert gap.value.missing == [1] and gap.value.mismatched == []


def test_an_entry_whose_digest_differs_from_the_expected_one_is_stale(store):
    stored = ToolResult(seq=0, call_id="a", name="shell", content="old output")
    store.put("c1", [stored])
    fresh = stored.model_copy(update={"content": "new output"})
    assert store.load("c1", 1, {0: entry_digest(stored)})[0].content == "old output"
    with pytest.raises(ContextGap) as gap:
        store.load("c1", 1, {0: entry_digest(fresh)})
    assert gap.value.mismatched == [0]


def test_load_range_reads_only_the_seqs_asked_for(store):
    store.put("c1", entries(5))
    got = store.load_range("c1", 3, 5)
    assert [e.seq for _, e in got] == [3, 4]
    assert all(digest == entry_digest(e) for digest, e in got)


def test_blobs_are_content_addressed_and_stored_once(store):
    first = store.put_blob("x" * 10_000)
    assert store.put_blob("x" * 10_000) == first
    assert store.get_blob(first) == "x" * 10_000
    assert store.get_blob("0" * 32) is None


def test_two_store_objects_on_one_file_see_each_others_writes(tmp_path):
    a, b = ContextStore(tmp_path / "shared.db"), ContextStore(tmp_path / "shared.db")
    a.put("c1", entries(2))
    assert [e.seq for e in b.load("c1", 2)] == [0, 1]


def test_workers_making_the_store_file_at_once_all_open_it(tmp_path):
    """Four workers making one new file, a hundred times over: none is refused as "database is
    locked" (two switching it to WAL at once each held the other off, about one round in twenty)."""
    def opened(path) -> int:
        ContextStore(path).put("c1", entries(1))
        return ContextStore(path).count("c1")

    with ThreadPoolExecutor(4) as pool:
        for round_ in range(100):
            assert list(pool.map(opened, [tmp_path / f"context-{round_}.db"] * 4)) == [1] * 4


def test_a_corrupt_store_file_is_moved_aside_and_rebuilt(tmp_path):
    path = tmp_path / "context.db"
    path.write_bytes(b"this is not a database, just a half-copied backup" * 100)
    store = ContextStore(path)
    store.put("c1", entries(1))
    assert store.count("c1") == 1
    aside = list(tmp_path.glob("context.db.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not a database")


def test_a_store_that_cannot_be_created_is_refused_with_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreUnavailable) as err:
        ContextStore(blocker / "sub" / "context.db")
    assert "cannot be opened" in str(err.value) and "\n" not in str(err.value)


def test_a_database_url_the_store_does_not_speak_is_refused():
    settings = StoreSettings.from_env({"AGENT_CONTEXT_DB": "mysql://db.example/agent"})
    with pytest.raises(StoreUnavailable, match="mysql:// store is not supported"):
        default_store_path(settings, PathSettings())
    with pytest.raises(StoreUnavailable, match="mysql:// store is not supported"):
        open_store(settings, PathSettings())


async def test_a_read_naming_the_digests_this_process_wrote_is_answered_from_memory(store):
    local = LocalStore(store)
    written = [ToolResult(seq=0, call_id="a", name="file", content="alpha"), UserMessage(seq=1, text="hi")]
    await local.put("c1", written)
    expect = {e.seq: entry_digest(e) for e in written}

    def no_database(*_args):
        raise AssertionError("the database was read")

    store.load_range = no_database  # type: ignore[method-assign]
    assert [e for _, e in await local.load_range("c1", 0, 2, expect)] == written
    # A read that does not name every digest, or names another one, goes to the database.
    for partial in ({0: expect[0]}, {0: expect[0], 1: "0" * 64}, None):
        with pytest.raises(AssertionError, match="the database was read"):
            await local.load_range("c1", 0, 2, partial)


async def test_an_entry_another_writer_replaced_is_read_from_the_database(store, tmp_path):
    local = LocalStore(store)
    mine = ToolResult(seq=0, call_id="a", name="file", content="first attempt")
    await local.put("c1", [mine])
    theirs = mine.model_copy(update={"content": "a retry on another worker"})
    ContextStore(store.path).put("c1", [theirs])  # another process, the same file
    # The workflow recorded the other worker's result: its digest is what is asked for.
    [(digest, entry)] = await local.load_range("c1", 0, 1, {0: entry_digest(theirs)})
    assert entry == theirs and digest == entry_digest(theirs)
    # A process without the first write in memory, asked for it by its digest, finds the
    # other one in the database: stale, a gap (the workflow then resends).
    with pytest.raises(ContextGap):
        await LocalStore(store).load_range("c1", 0, 1, {0: entry_digest(mine)})


def test_recent_entries_keep_the_newest_writes_up_to_their_limit():
    recent = RecentEntries(limit=3)
    made = [UserMessage(seq=i, text=str(i)) for i in range(5)]
    recent.add("c", made, [entry_digest(e) for e in made])
    assert recent.get("c", 0, 1, {0: entry_digest(made[0])}) is None  # dropped, oldest first
    assert recent.get("c", 2, 5, {i: entry_digest(made[i]) for i in range(2, 5)}) == [
        (entry_digest(e), e) for e in made[2:]]
    assert recent.get("other", 2, 3, {2: entry_digest(made[2])}) is None
