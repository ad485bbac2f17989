"""Compaction: the model's view of a long transcript, by whole turns."""

from __future__ import annotations

import copy
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from core.compaction import COMPACTED_REASON, CompactionMemo, CompactionPolicy, CompactionResult, compact
from core.entries import (
    AiMessage,
    Entry,
    StatusNotice,
    SystemReminder,
    ToolCall,
    ToolResult,
    Transcript,
    UserMessage,
    to_chat_messages,
)
from core.messages import ChatMessage, ToolCallRequest
from core.turns import estimate_tokens, group_turns
from tests.core.test_turns import Block, blocks, call, flatten
from tools import COMPACT_KEYS

REQUEST = "Refactor the parser package and keep the tests green."

# --- strategies ---------------------------------------------------------------------


@st.composite
def transcripts(draw: st.DrawFn) -> list[Entry]:
    """A request (maybe after a notice), then random blocks, some with large results."""
    parts: list[Block] = []
    if draw(st.booleans()):
        parts.append(Block("notice", [StatusNotice(text="starting")]))
    parts.append(Block("user", [UserMessage(text=REQUEST * draw(st.integers(1, 20)))]))
    parts += draw(blocks(max_size=40))
    return flatten(parts)


policies = st.builds(
    CompactionPolicy,
    context_window=st.integers(300, 20_000),
    threshold=st.floats(0.05, 1.0),
    tail_fraction=st.floats(0.01, 1.0),
    guard_fraction=st.floats(0.05, 1.0),
    max_result_tokens=st.none() | st.integers(20, 2_000),
    compact_keys=st.just(COMPACT_KEYS),
    system_tokens=st.integers(0, 1_000),
)


def assert_calls_paired(messages: list[ChatMessage]) -> None:
    """Every assistant tool call has its results before the next assistant message, and
    every result answers a call."""
    waiting: Counter[str] = Counter()
    for message in messages:
        if message.role == "assistant":
            assert not waiting, f"calls without results: {dict(waiting)}"
            waiting = Counter(call.id for call in message.tool_calls)
        elif message.role == "tool":
            assert waiting[message.tool_call_id] > 0, f"result without a call: {message.tool_call_id}"
            waiting[message.tool_call_id] -= 1
            waiting += Counter()  # drop zero counts
    assert not waiting


def view_tokens(result: CompactionResult, policy: CompactionPolicy) -> int:
    return policy.system_tokens + sum(estimate_tokens(entry) for entry in result.entries)


# --- properties -------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(transcripts(), policies)
def test_first_user_message_is_always_in_the_view_in_full(entries, policy):
    request = next(entry for entry in entries if isinstance(entry, UserMessage))
    result = compact(entries, policy)
    assert any(entry is request for entry in result.entries)


@settings(max_examples=300, deadline=None)
@given(transcripts(), policies)
def test_compacted_view_keeps_every_tool_call_paired_with_its_results(entries, policy):
    result = compact(entries, policy)
    assert_calls_paired(to_chat_messages(result.entries))


@settings(max_examples=300, deadline=None)
@given(transcripts(), policies)
def test_compacted_view_keeps_input_order_and_only_copies_what_it_changes(entries, policy):
    result = compact(entries, policy)
    position = {id(entry): index for index, entry in enumerate(entries)}
    seen: list[int] = []
    for entry in result.entries:
        if id(entry) in position:
            seen.append(position[id(entry)])
        elif isinstance(entry, ToolResult):
            assert entry.truncated and entry.seq in {e.seq for e in entries}
            seen.append(entry.seq)
        else:
            assert isinstance(entry, SystemReminder) and entry.reason == COMPACTED_REASON
    assert seen == sorted(seen) and len(set(seen)) == len(seen)
    assert result.changed or result.entries == list(entries)


@settings(max_examples=300, deadline=None)
@given(transcripts(), policies)
def test_compacted_view_is_within_the_guard_budget_when_request_and_newest_turn_fit(entries, policy):
    result = compact(entries, policy)
    assert result.tokens_after == view_tokens(result, policy)
    if result.tokens_before < policy.trigger_tokens:
        return
    turns = group_turns(entries)
    request = next(turn for turn in turns if any(isinstance(e, UserMessage) for e in turn.entries))
    least = policy.system_tokens + sum(map(estimate_tokens, result.entries[: len(request.entries)]))
    if turns[-1] is not request:  # the view ends with the newest turn, results cut as needed
        least += sum(map(estimate_tokens, result.entries[-len(turns[-1].entries) :]))
    if least <= policy.guard_tokens:
        assert result.tokens_after <= policy.guard_tokens


@settings(max_examples=200, deadline=None)
@given(transcripts(), policies)
def test_compaction_is_deterministic_and_does_not_touch_its_input(entries, policy):
    snapshot = [entry.model_dump() for entry in entries]
    twin = copy.deepcopy(entries)
    first = compact(entries, policy)
    again = compact(entries, policy)
    other = compact(twin, policy)
    assert first.model_dump_json() == again.model_dump_json() == other.model_dump_json()
    assert [entry.model_dump() for entry in entries] == snapshot


@settings(max_examples=200, deadline=None)
@given(transcripts(), policies)
def test_compacting_a_compacted_view_again_works_and_keeps_pairing(entries, policy):
    once = compact(entries, policy)
    twice = compact(once.entries, policy)
    assert_calls_paired(to_chat_messages(twice.entries))


# --- examples ---------------------------------------------------------------------------


def read(call_id: str, path: str, size: int, status: str = "ok") -> list[Entry]:
    return [
        ToolCall(calls=[call(call_id, "file", action="read", path=path)]),
        ToolResult(call_id=call_id, name="file", content="x" * size, status=status),
    ]


def record(*groups: list[Entry] | Entry) -> list[Entry]:
    transcript = Transcript()
    for group in groups:
        for entry in group if isinstance(group, list) else [group]:
            transcript.append(entry)
    return transcript.entries


def test_transcript_under_the_threshold_is_returned_unchanged():
    entries = record(UserMessage(text=REQUEST), read("a", "a.py", 4_000), AiMessage(text="done"))
    result = compact(entries, CompactionPolicy(compact_keys=COMPACT_KEYS, context_window=10_000, system_tokens=0))
    assert result.entries == entries and all(a is b for a, b in zip(result.entries, entries))
    assert not result.changed
    assert (result.compacted_turns, result.dropped_turns, result.truncated_results) == (0, 0, 0)
    assert result.tokens_before == result.tokens_after == sum(map(estimate_tokens, entries))
    assert result.first_kept_seq is None


def test_long_transcript_compacts_the_middle_into_one_line_per_turn():
    docs = "Also update the docs and the changelog for every public function. " * 5
    tail = [read("t7", "c.py", 2_800), read("t8", "d.py", 2_800)]
    entries = record(
        UserMessage(text=REQUEST),
        read("t1", "a.py", 8_000),
        [
            ToolCall(calls=[call("t2", "shell", command="pytest -q")]),
            ToolResult(call_id="t2", name="shell", content="F" * 8_000, status="error"),
        ],
        [
            ToolCall(
                calls=[
                    call("t3", "file", action="write", path="b.py", content="print()"),
                    call("t3b", "shell", command="ls"),
                ]
            ),
            ToolResult(call_id="t3", name="file", content="wrote b.py"),
            ToolResult(call_id="t3b", name="shell", content="[not executed]", status="deferred"),
        ],
        [AiMessage(text="Tests fail;\n fixing <parser>."), SystemReminder(text="use a tool", reason="no_tool_call")],
        UserMessage(text=docs),
        [SystemReminder(text="Step 2 of the plan.", reason="workflow"), StatusNotice(text="retrying")],
        read("t6", "big.txt", 8_000),
        *tail,
    )
    policy = CompactionPolicy(compact_keys=COMPACT_KEYS, context_window=10_000, system_tokens=0)
    result = compact(entries, policy)

    block = result.entries[1]
    assert result.entries[0] is entries[0]
    assert isinstance(block, SystemReminder) and block.reason == "compacted_history"
    # The tail budget (1,500 tokens) is cut in steps of half of it: both reads of 2,800
    # characters (~700 tokens each) would fit, but the step rule keeps only the newest.
    assert block.text.splitlines() == [
        '<compacted_history turns="8">',
        '<tool name="file" action="read" path="a.py" status="ok"/>',
        '<tool name="shell" command="pytest -q" status="error"/>',
        '<tool name="file" action="write" path="b.py" status="ok"/>',
        "<assistant>Tests fail; fixing &lt;parser&gt;.</assistant>",
        f"<user>{' '.join(docs.split())[:200]}…</user>",
        '<reminder reason="workflow"/>',
        '<tool name="file" action="read" path="big.txt" status="ok"/>',
        '<tool name="file" action="read" path="c.py" status="ok"/>',
        "</compacted_history>",
    ]
    assert result.entries[2:] == tail[1]
    assert result.compacted_turns == 8 and result.dropped_turns == 0 and result.changed
    assert result.first_kept_seq == tail[1][0].seq
    assert result.tokens_after == view_tokens(result, policy) < policy.trigger_tokens
    assert_calls_paired(to_chat_messages(result.entries))


def test_window_guard_drops_oldest_turns_but_keeps_the_request_and_newest_turn():
    turns = [read(f"t{i}", f"f{i}.py", 2_800) for i in range(10)]
    entries = record(UserMessage(text=REQUEST), *turns)
    policy = CompactionPolicy(
        compact_keys=COMPACT_KEYS,
        context_window=10_000, threshold=0.1, tail_fraction=1.0, guard_fraction=0.5, system_tokens=0
    )
    result = compact(entries, policy)

    assert result.compacted_turns == 0 and result.dropped_turns > 0
    assert result.tokens_after <= policy.guard_tokens
    assert result.entries[0] is entries[0]
    kept = turns[result.dropped_turns :]
    assert result.entries[2:] == [entry for turn in kept for entry in turn]
    lines = result.entries[1].text.splitlines()
    assert lines[0] == f'<compacted_history turns="{result.dropped_turns}">'
    assert lines[1:-1] == [
        f'<tool name="file" action="read" path="f{i}.py" status="ok"/>' for i in range(result.dropped_turns)
    ]


def test_window_guard_never_drops_a_request_too_big_for_the_window():
    entries = record(
        UserMessage(text="r" * 30_000), *[read(f"t{i}", f"f{i}.py", 2_000) for i in range(5)]
    )
    policy = CompactionPolicy(compact_keys=COMPACT_KEYS, context_window=10_000, guard_fraction=0.5, system_tokens=0)
    result = compact(entries, policy)

    assert result.entries[0] is entries[0]
    assert result.entries[-2:] == entries[-2:]
    assert result.compacted_turns + result.dropped_turns == 4
    assert result.tokens_after > policy.guard_tokens  # reported, not hidden
    assert not any(isinstance(entry, SystemReminder) for entry in result.entries)  # no room for the block


def test_single_huge_tool_result_is_cut_to_head_and_tail_with_a_note():
    content = "HEAD" + "m" * 49_992 + "TAIL"
    entries = record(
        UserMessage(text=REQUEST),
        ToolCall(calls=[call("a", "shell", command="cat big.log")]),
        ToolResult(call_id="a", name="shell", content=content),
    )
    policy = CompactionPolicy(compact_keys=COMPACT_KEYS, context_window=10_000, system_tokens=0)
    result = compact(entries, policy)

    cut = result.entries[-1]
    assert isinstance(cut, ToolResult) and cut is not entries[-1]
    assert result.truncated_results == 1 and result.changed
    assert cut.content.startswith("HEAD") and cut.content.endswith("TAIL")
    assert len(cut.content) <= policy.result_limit * 4
    kept = len(cut.content) - len(cut.content.splitlines()[1]) - 2
    assert cut.content.splitlines()[1] == (
        f"[... truncated {len(content) - kept} characters for the context window; "
        "re-run the tool with narrower arguments to see it ...]"
    )
    assert cut.truncated and cut.call_id == "a" and cut.seq == entries[-1].seq
    assert entries[-1].content == content and not entries[-1].truncated


def test_compaction_does_not_mutate_the_input_list_or_its_entries():
    entries = record(
        UserMessage(text=REQUEST),
        *[read(f"t{i}", f"f{i}.py", 3_000) for i in range(20)],
        ToolCall(calls=[call("big", "shell", command="cat log")]),
        ToolResult(call_id="big", name="shell", content="z" * 60_000),
    )
    before = copy.deepcopy(entries)
    ids = [id(entry) for entry in entries]
    result = compact(entries, CompactionPolicy(compact_keys=COMPACT_KEYS, context_window=10_000))

    assert result.changed and result.truncated_results == 1 and result.compacted_turns > 0
    assert entries == before and [id(entry) for entry in entries] == ids


def test_deferred_calls_are_left_out_of_the_summary_line():
    entries = record(
        UserMessage(text=REQUEST),
        [
            ToolCall(calls=[call("a", "file", action="list", path="src"), call("b", "shell", command="rm -rf x")]),
            ToolResult(call_id="a", name="file", content="a.py"),
            ToolResult(call_id="b", name="shell", content="[not executed]", status="deferred"),
        ],
        read("c", "c.py", 8_000),
    )
    result = compact(entries, CompactionPolicy(compact_keys=COMPACT_KEYS, context_window=10_000, threshold=0.1, system_tokens=0))
    text = result.entries[1].text
    assert '<tool name="file" action="list" path="src" status="ok"/>' in text
    assert "rm -rf" not in text


def test_calls_with_unparsed_arguments_still_compact():
    broken = ToolCallRequest(id="a", name="shell", arguments_raw="{oops", parse_error="bad JSON")
    entries = record(
        UserMessage(text=REQUEST),
        [ToolCall(calls=[broken]), ToolResult(call_id="a", name="shell", content="send JSON", status="retry")],
        read("c", "c.py", 8_000),
    )
    result = compact(entries, CompactionPolicy(compact_keys=COMPACT_KEYS, context_window=10_000, threshold=0.1, system_tokens=0))
    assert '<tool name="shell" status="retry"/>' in result.entries[1].text


def test_window_guard_leaves_out_the_oldest_summary_lines_when_the_block_is_too_big():
    small = [read(f"t{i}", f"src/module_{i}.py", 10) for i in range(100)]
    entries = record(UserMessage(text=REQUEST), *small, read("last", "last.py", 2_000))
    policy = CompactionPolicy(compact_keys=COMPACT_KEYS, context_window=2_000, threshold=0.1, guard_fraction=0.5, system_tokens=0)
    result = compact(entries, policy)

    lines = result.entries[1].text.splitlines()
    omitted = 100 - (len(lines) - 2)
    assert 0 < omitted < 100
    assert lines[0] == f'<compacted_history turns="{100 - omitted}" omitted="{omitted}">'
    assert lines[-2] == '<tool name="file" action="read" path="src/module_99.py" status="ok"/>'
    assert result.tokens_after <= policy.guard_tokens
    assert result.entries[-2:] == entries[-2:]


def test_thousands_of_turns_keep_their_recent_turns_in_full_and_the_newest_lines_that_fit():
    turns = [read(f"t{i}", f"src/module_{i}.py", 400) for i in range(3000)]
    entries = record(UserMessage(text=REQUEST), *turns)
    policy = CompactionPolicy(compact_keys=COMPACT_KEYS, context_window=20_000, system_tokens=0)
    result = compact(entries, policy)

    assert result.tokens_after <= policy.guard_tokens
    kept = result.entries[2:]  # after the request and the block
    assert len(kept) >= 2 * 10 and kept == entries[-len(kept):]  # at least ten recent turns, in full
    lines = result.entries[1].text.splitlines()
    assert 'omitted="' in lines[0]  # the oldest lines made room
    newest_compacted = (len(entries) - len(kept)) // 2 - 1
    assert lines[-2] == f'<tool name="file" action="read" path="src/module_{newest_compacted}.py" status="ok"/>'


def test_the_compaction_boundary_holds_still_while_turns_come_in_so_the_prompt_cache_holds():
    """Each call's view is a prefix of the next one's until the boundary takes its next step."""
    policy = CompactionPolicy(compact_keys=COMPACT_KEYS, context_window=40_000, system_tokens=0)
    entries = record(UserMessage(text=REQUEST), *[read(f"t{i}", f"f{i}.py", 4_000) for i in range(60)])
    views = [compact(entries[: 1 + 2 * n], policy) for n in range(40, 61)]
    prefix_kept = sum(
        1 for a, b in zip(views, views[1:])
        if b.entries[: len(a.entries)] == a.entries and a.first_kept_seq == b.first_kept_seq
    )
    moves = sum(1 for a, b in zip(views, views[1:]) if a.first_kept_seq != b.first_kept_seq)
    # Turns of ~1,000 tokens against a 6,000-token tail cut in 3,000-token steps: the boundary
    # moves about every third turn (a boundary filled to the last token moves every turn).
    assert moves <= 8 and prefix_kept >= 12 and moves + prefix_kept == 20
    for view in views:
        tail_tokens = view.tokens_after - sum(
            estimate_tokens(e) for e in view.entries[:2]  # the request and the block
        )
        assert policy.tail_tokens / 2 <= tail_tokens <= policy.tail_tokens


def test_every_call_of_a_reply_that_ran_is_in_the_summary_line():
    entries = record(
        UserMessage(text=REQUEST),
        [
            ToolCall(calls=[call("a", "file", action="read", path="a.py"), call("b", "file", action="read", path="b.py"),
                            call("c", "shell", command="make"), call("d", "shell", command="rm -rf x")]),
            ToolResult(call_id="a", name="file", content="A"),
            ToolResult(call_id="b", name="file", content="B"),
            ToolResult(call_id="c", name="shell", content="built"),
            ToolResult(call_id="d", name="shell", content="[not executed]", status="deferred"),
        ],
        read("e", "e.py", 8_000),
    )
    result = compact(entries, CompactionPolicy(compact_keys=COMPACT_KEYS, context_window=10_000, threshold=0.1, system_tokens=0))
    text = result.entries[1].text
    assert '<tool name="file" action="read" path="a.py" status="ok"/>' in text
    assert '<tool name="file" action="read" path="b.py" status="ok"/>' in text
    assert "make" in text and "rm -rf" not in text


# --- a task's memo: the same view from far less work ---------------------------------------


@st.composite
def unruly(draw: st.DrawFn) -> list[Entry]:
    """Entries in any order the engine could ever write, and some it should not: results late,
    missing, twice or for no call, ids reused across replies, reminders and notices anywhere."""
    entries: list[Entry] = [UserMessage(text=REQUEST * draw(st.integers(1, 5)))]
    ids: list[str] = []
    for _ in range(draw(st.integers(0, 60))):
        kind = draw(st.sampled_from(["call", "call", "result", "result", "result", "user", "ai", "reminder", "notice"]))
        text = draw(st.text(alphabet="ab <&\n", max_size=200))
        if kind == "call":
            new = [f"c{draw(st.integers(0, 12))}" for _ in range(draw(st.integers(1, 3)))]
            ids += new
            entries.append(ToolCall(text=text[:20], calls=[call(i) for i in new]))
        elif kind == "result":
            call_id = draw(st.sampled_from(ids)) if ids and draw(st.booleans()) else f"c{draw(st.integers(0, 12))}"
            entries.append(ToolResult(call_id=call_id, name="file", content=text * draw(st.integers(1, 20)),
                                      status=draw(st.sampled_from(["ok", "error", "deferred"]))))
        elif kind == "user":
            entries.append(UserMessage(text=text))
        elif kind == "ai":
            entries.append(AiMessage(text=text))
        elif kind == "reminder":
            entries.append(SystemReminder(text=text, reason="loop"))
        else:
            entries.append(StatusNotice(text=text))
    transcript = Transcript()
    for entry in entries:
        transcript.append(entry)
    return transcript.entries


@settings(max_examples=300, deadline=None)
@given(unruly(), policies, st.integers(1, 6))
def test_a_memo_gives_every_call_of_a_growing_transcript_the_same_view_as_without_it(entries, policy, step):
    memo = CompactionMemo()
    for end in [*range(1, len(entries), step), len(entries)]:
        now = entries[:end] if end % 5 else [e.model_copy() for e in entries[:end]]  # now and then: read again
        with_memo = compact(now, policy, memo)
        assert with_memo.model_dump() == compact(now, policy).model_dump()
        assert [(t.kind, t.entries) for t in memo.turns()] == [(t.kind, t.entries) for t in group_turns(now)]
    shorter = entries[: len(entries) // 2]  # a rewind: the transcript ends earlier
    assert compact(shorter, policy, memo).model_dump() == compact(shorter, policy).model_dump()
