"""The model's view on its own (no Temporal, a real context store): what is read, from where,
what fills a gap, how the view is cut to the window, and the reply written for the next turn."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from activities.model_view import IMAGE_OMITTED_NOTE, MAX_IMAGES_SENT, ModelView
from contracts.activities import ContextPage, LlmCallInput
from core.entries import AiMessage, Entry, ToolCall, ToolResult, UserMessage, entry_digest
from core.messages import ToolCallRequest, TurnResult
from core.tool_outcome import ImageRef
from providers.usage import IMAGE_TOKENS
from runtime.secrets import SecretStore
from runtime.store import ContextGap, ContextStore, LocalStore, Store, as_store
from tests.providers.images import b64, png

SECRET = "sk-test-0123456789abcdef"


class CountingStore(LocalStore):
    """The store, counting the seqs each read starts at."""

    def __init__(self, sqlite: ContextStore) -> None:
        super().__init__(sqlite)
        self.reads: list[int] = []

    async def load_range(self, context_id: str, start: int, end: int, expect: dict[int, str] | None = None):
        self.reads.append(start)
        return await super().load_range(context_id, start, end, expect)


def call(entries: list[Entry], total: int | None = None, **fields: Any) -> LlmCallInput:
    fields = {"task_id": "t1", "turn": 1, "model": "m", "context_id": "ctx", **fields}
    return LlmCallInput(new_entries=entries, total=len(entries) if total is None else total, **fields)


def view_of(store: Store, **kwargs: Any) -> ModelView:
    return ModelView(store, SecretStore({"API_KEY": SECRET}), **kwargs)


def turn(seq: int, output: str, *, call_id: str | None = None) -> list[Entry]:
    call_id = call_id or f"c{seq}"
    request = ToolCallRequest(id=call_id, name="shell", arguments={"command": f"step {seq}"})
    return [ToolCall(seq=seq, turn=seq, calls=[request]),
            ToolResult(seq=seq + 1, turn=seq, call_id=call_id, name="shell", content=output)]


async def test_each_call_reads_only_the_entries_that_are_new(tmp_path):
    store = CountingStore(ContextStore(tmp_path / "c.db"))
    view = view_of(store)
    first = [UserMessage(seq=0, text="hello"), *turn(1, "one")]
    assert len(await view.entries(call(first), "run")) == 3
    second = turn(3, "two")
    entries = await view.entries(call(second, total=5), "run")
    assert [e.seq for e in entries] == [0, 1, 2, 3, 4] and store.reads == [0, 3]


async def test_past_its_characters_the_least_recent_tasks_entries_are_let_go_and_read_again(tmp_path):
    store = CountingStore(ContextStore(tmp_path / "c.db"))
    view = view_of(store, keep_chars=30_000)
    big = [UserMessage(seq=0, text="hello"), *turn(1, "x" * 20_000)]
    await view.entries(call(big, context_id="a"), "run")
    await view.entries(call(big, context_id="b"), "run")  # 40,000 characters with a's: a goes
    await view.entries(call(turn(3, "more"), total=5, context_id="b"), "run")
    assert store.reads == [0, 0, 3]
    again = await view.entries(call([], total=3, context_id="a"), "run")  # a: read in full again
    assert [e.seq for e in again] == [0, 1, 2] and store.reads[-1] == 0


async def test_a_task_let_go_for_its_characters_takes_its_compaction_memo_along(tmp_path):
    view = view_of(as_store(ContextStore(tmp_path / "c.db")), keep_chars=30_000)
    first = [UserMessage(seq=0, text="hello"), *turn(1, "x" * 20_000)]
    await view.build(call(first, context_id="a"), None, 0, vision=False)
    held = weakref.ref((await view.entries(call([], total=3, context_id="a"), "run"))[2])
    await view.build(call(first, context_id="b"), None, 0, vision=False)  # a goes, memo and all
    gc.collect()
    assert held() is None  # nothing on the worker keeps a's 20,000 characters


async def test_a_gap_is_filled_once_from_the_workflow_with_the_run_id(tmp_path):
    asked: list[tuple[str, str | None, int]] = []
    known = [UserMessage(seq=0, text="the request"), *turn(1, "out")]

    async def workflow(workflow_id: str, run_id: str | None, after: int) -> ContextPage:
        asked.append((workflow_id, run_id, after))
        return ContextPage(base=0, entries=known[after:])

    view = view_of(as_store(ContextStore(tmp_path / "c.db")), history=workflow)
    entries = await view.entries(call([], total=3), "run-7")
    assert entries == known and asked == [("t1", "run-7", 0)]


async def test_without_the_workflow_a_gap_is_raised_and_the_cache_dropped(tmp_path):
    store = as_store(ContextStore(tmp_path / "c.db"))
    view = view_of(store)
    await view.entries(call([UserMessage(seq=0, text="hi")]), None)
    with pytest.raises(ContextGap) as gap:
        await view.entries(call([], total=3, expect={2: "0" * 64}), None)
    assert gap.value.missing
    assert len(await view.entries(call([UserMessage(seq=0, text="again")]), None)) == 1  # read afresh


class LateWriteStore(LocalStore):
    """The store, with a write of an activity the workflow cancelled landing right after the next
    LLM call wrote its new entries (the cancelled activity's write runs on in its thread): a reply
    it stores ahead of the workflow (``put_new``), a tool call's result (``finish_call``), or a
    replacing write (``put``)."""

    def __init__(self, sqlite: ContextStore, late: Entry, how: str) -> None:
        super().__init__(sqlite)
        self.late: Entry | None = late
        self.how = how

    async def put(self, context_id: str, entries: list[Entry]) -> None:
        await super().put(context_id, entries)
        if self.late is not None and any(e.seq == self.late.seq for e in entries):
            late, self.late = self.late, None
            if self.how == "finish_call":
                await super().finish_call(context_id, [late], "run:2:c", '{"status": "ok"}')
            else:
                await getattr(super(), self.how)(context_id, [late])


@pytest.mark.parametrize("how", ["put_new", "finish_call", "put"])
@pytest.mark.parametrize("workflow_answers", [True, False])
async def test_a_cancelled_calls_late_write_never_stands_in_for_what_the_workflow_sent(tmp_path, how, workflow_answers):
    """The person's message the workflow sent at seq 2 is what the model reads, not the reply a
    cancelled call stored there after it: a reply or a result stored ahead never replaces an entry,
    and any other late write is caught by its digest (refilled from the workflow, else the gap is raised)."""
    known = [UserMessage(seq=0, text="do the thing"), UserMessage(seq=1, text="first"),
             UserMessage(seq=2, text="second")]
    late = ToolCall(seq=2, turn=1, calls=[ToolCallRequest(id="c", name="message", arguments={"text": "x"})])

    async def workflow(workflow_id: str, run_id: str | None, after: int) -> ContextPage:
        return ContextPage(base=0, entries=known[after:])

    store = LateWriteStore(ContextStore(tmp_path / "c.db"), late, how)
    view = view_of(store, history=workflow if workflow_answers else None)
    await view.entries(call(known[:2]), "run")
    if how == "put" and not workflow_answers:
        with pytest.raises(ContextGap) as gap:
            await view.entries(call(known[2:], total=3), "run")
        assert gap.value.mismatched == [2]
        return
    assert await view.entries(call(known[2:], total=3), "run") == known
    assert await store.load("ctx", 3) == known  # and the store holds what the workflow sent


async def test_a_task_whose_entries_are_dropped_for_a_gap_keeps_no_memo_of_them(tmp_path):
    view = view_of(as_store(ContextStore(tmp_path / "c.db")))
    await view.build(call([UserMessage(seq=0, text="hi " * 1000)]), None, 0, vision=False)
    held = weakref.ref((await view.entries(call([], total=1), None))[0])
    with pytest.raises(ContextGap):
        await view.entries(call([], total=3, expect={2: "0" * 64}), None)
    gc.collect()
    assert held() is None  # neither the cache nor the task's compaction memo keeps them


async def test_the_prefix_stands_in_for_entries_of_earlier_runs(tmp_path):
    prefix = [UserMessage(seq=0, text="the original request")]
    run: list[Entry] = [UserMessage(seq=2, text="this run")]
    view = view_of(as_store(ContextStore(tmp_path / "c.db")))
    entries = await view.entries(call(run, total=3, prefix=prefix, base=2), None)
    assert entries == prefix + run


async def test_a_large_output_is_read_in_full_from_its_blob(tmp_path):
    sqlite = ContextStore(tmp_path / "c.db")
    digest = sqlite.put_blob("the whole output")
    stored = ToolResult(seq=2, call_id="c1", name="shell", content="a preview", blob=digest)
    view = view_of(as_store(sqlite))
    entries = await view.entries(call([UserMessage(seq=0, text="go"), turn(1, "")[0], stored]), None)
    assert entries[-1] == stored.model_copy(update={"content": "the whole output"})


async def test_the_view_is_compacted_to_the_window_and_reports_it(tmp_path):
    entries: list[Entry] = [UserMessage(seq=0, text="the request")]
    for seq in range(1, 41, 2):
        entries += turn(seq, "x" * 2000)
    view = view_of(as_store(ContextStore(tmp_path / "c.db")))
    built = await view.build(call(entries, context_window=8000), None, system_tokens=500, vision=False)
    assert built.report.entries == len(entries) and built.report.compacted_turns > 0
    assert built.report.tokens_after < built.report.tokens_before
    assert built.messages[0].content.startswith("the request")  # the original request always stays


async def test_the_messages_are_redacted(tmp_path):
    view = view_of(as_store(ContextStore(tmp_path / "c.db")))
    built = await view.build(call([UserMessage(seq=0, text=f"my key is {SECRET}")]), None, 0, vision=False)
    assert SECRET not in built.messages[0].content and "API_KEY" in built.messages[0].content


async def test_only_the_latest_images_are_attached_and_counted(tmp_path):
    sqlite = ContextStore(tmp_path / "c.db")
    entries: list[Entry] = [UserMessage(seq=0, text="look")]
    for n in range(MAX_IMAGES_SENT + 1):
        call_id = f"c{n}"
        ref = ImageRef(media_type="image/png", digest=sqlite.put_blob(b64(png(n + 1, 1))), size=60, width=1, height=1)
        entries += [ToolCall(seq=len(entries), calls=[ToolCallRequest(id=call_id, name="file", arguments={})]),
                    ToolResult(seq=len(entries) + 1, call_id=call_id, name="file", content="an image", image=ref)]
    view = view_of(as_store(sqlite))
    built = await view.build(call(entries, model="gpt-4o"), None, 0, vision=True)
    tool_messages = [m for m in built.messages if m.role == "tool"]
    assert [len(m.images) for m in tool_messages] == [0, 1, 1, 1]
    assert tool_messages[0].content == "an image\n" + IMAGE_OMITTED_NOTE
    assert built.image_tokens == MAX_IMAGES_SENT * IMAGE_TOKENS
    blind = await view.build(call([], total=len(entries), model="m"), None, 0, vision=False)
    assert blind.image_tokens == 0 and not any(m.images for m in blind.messages)


@pytest.mark.parametrize("notice, seq", [(None, 5), ("answered unstreamed", 6)])
async def test_the_reply_is_stored_at_the_seq_the_workflow_gives_it(tmp_path, notice: str | None, seq: int):
    sqlite = ContextStore(tmp_path / "c.db")
    view = view_of(as_store(sqlite))
    request = ToolCallRequest(id="c9", name="shell", arguments={"command": "ls"})
    with_call = TurnResult(content="running it", tool_calls=[request], notice=notice)
    digest = await view.store_reply(call([], total=5), with_call)
    stored = sqlite.load_range("ctx", seq, seq + 1, {seq: digest})
    assert stored[0][1] == ToolCall(seq=seq, turn=1, text="running it", calls=[request])
    text_alone = await view.store_reply(call([], total=7), TurnResult(content="done"))
    assert text_alone == entry_digest(AiMessage(seq=7, turn=1, text="done"))


async def test_a_reply_whose_seq_is_taken_returns_the_digest_there_so_the_workflow_sends_it(tmp_path):
    store = as_store(ContextStore(tmp_path / "c.db"))
    person = UserMessage(seq=5, text="stop, do this instead")
    await store.put("ctx", [person])  # the workflow put the person's message where the reply would go
    assert await view_of(store).store_reply(call([], total=5), TurnResult(content="done")) == entry_digest(person)
    assert await store.load_range("ctx", 5, 6) == [(entry_digest(person), person)]
