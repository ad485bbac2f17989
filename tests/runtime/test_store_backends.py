"""The context store's contract, run against both backends: SQLite (the embedded default, a
cache per host) and PostgreSQL (one store for every host), each the real database."""

from __future__ import annotations

import uuid

import pytest

from core.entries import ToolResult, UserMessage, entry_digest
from runtime.store import ContextGap, Store, StoreUnavailable, open_store
from tests.configured import settings


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request, tmp_path):
    target = str(tmp_path / "context.db") if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    opened = open_store(target, settings().paths)
    await opened.check()
    try:
        yield opened
    finally:
        await opened.close()


def ctx() -> str:
    return f"ctx-{uuid.uuid4().hex[:8]}"


def entries(n: int) -> list:
    return [UserMessage(seq=i, text=f"message {i}") for i in range(n)]


async def test_put_then_load_returns_the_entries_in_order(store: Store):
    c = ctx()
    await store.put(c, entries(3))
    assert [e.text for e in await store.load(c, 3)] == ["message 0", "message 1", "message 2"]


async def test_writing_the_same_seq_again_replaces_it(store: Store):
    c = ctx()
    await store.put(c, entries(2))
    await store.put(c, [UserMessage(seq=1, text="retried")])
    assert [e.text for e in await store.load(c, 2)] == ["message 0", "retried"]


async def test_put_new_writes_only_where_nothing_is_yet(store: Store):
    """A reply an LLM call stores ahead of the workflow never replaces what the workflow wrote."""
    c = ctx()
    await store.put(c, entries(2))
    new = UserMessage(seq=2, text="new")
    held = await store.put_new(c, [UserMessage(seq=1, text="late reply"), new])
    assert [e.text for e in await store.load(c, 3)] == ["message 0", "message 1", "new"]
    assert held == [entry_digest(entries(2)[1]), entry_digest(new)]  # what each seq holds


async def test_missing_and_stale_entries_are_a_gap(store: Store):
    c = ctx()
    stored = ToolResult(seq=0, call_id="a", name="shell", content="old")
    await store.put(c, [stored, UserMessage(seq=2, text="x")])
    with pytest.raises(ContextGap) as gap:
        await store.load(c, 3, {0: entry_digest(stored.model_copy(update={"content": "new"}))})
    assert gap.value.missing == [1] and gap.value.mismatched == [0]


async def test_a_finished_call_writes_its_result_entry_and_its_record_together(store: Store):
    c = ctx()
    result = ToolResult(seq=4, call_id="a", name="shell", content="done")
    assert await store.finish_call(c, [result], "run:4:a", '{"status": "ok"}') == [entry_digest(result)]
    assert await store.get_call(c, "run:4:a") == ("finished", '{"status": "ok"}')
    [(digest, entry)] = await store.load_range(c, 4, 5, {4: entry_digest(result)})
    assert entry == result and digest == entry_digest(result)


async def test_a_call_finishing_late_leaves_what_the_workflow_put_at_its_seq(store: Store):
    """A call cancelled for a person's message ends after the workflow put ``[interrupted]`` at
    its seq: its record is written, the entry stays, and it is told the digest the seq holds."""
    c = ctx()
    interrupted = ToolResult(seq=4, call_id="a", name="shell", content="[interrupted]")
    await store.put(c, [interrupted])
    late = interrupted.model_copy(update={"content": "done"})
    assert await store.finish_call(c, [late], "run:4:a", '{"status": "ok"}') == [entry_digest(interrupted)]
    assert await store.get_call(c, "run:4:a") == ("finished", '{"status": "ok"}')
    assert await store.load_range(c, 4, 5) == [(entry_digest(interrupted), interrupted)]


async def test_the_prefix_is_kept_per_context(store: Store):
    c = ctx()
    assert await store.get_prefix(c) is None
    await store.put_prefix(c, 5, entries(2))
    await store.put_prefix(c, 9, entries(3))
    base, prefix = await store.get_prefix(c) or (None, [])
    assert base == 9 and [e.text for e in prefix] == ["message 0", "message 1", "message 2"]


async def test_blobs_are_content_addressed(store: Store):
    text = f"{uuid.uuid4()} " * 3000
    digest = await store.put_blob(text)
    assert await store.put_blob(text) == digest
    assert await store.get_blob(digest) == text
    assert await store.get_blob("f" * 64) is None


async def test_session_tasks_are_listed_oldest_first_and_rerecorded_once(store: Store):
    name = f"s-{uuid.uuid4().hex[:6]}"
    await store.record_session_task(name, "c1", "w1", "DONE", "first", 3)
    await store.record_session_task(name, "c2", "w2", "FAILED", "second", 4)
    await store.record_session_task(name, "c1", "w1", "DONE", "first again", 5)
    assert [row[0] for row in await store.session_tasks(name)] == ["c2", "c1"]
    assert (await store.session_tasks(name))[-1][3:] == ("first again", 5)


async def test_a_postgres_store_that_is_down_is_refused_with_one_line():
    store = open_store("postgresql://agent:secret@127.0.0.1:1/agent", settings().paths)
    with pytest.raises(StoreUnavailable) as err:
        await store.check()
    message = str(err.value)
    assert "cannot be used" in message and "secret" not in message and "\n" not in message
