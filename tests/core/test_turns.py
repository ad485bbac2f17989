"""The turn grouper: seed 000 counts its tests among the most important in the project."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from core.entries import (
    AiMessage,
    Entry,
    StatusNotice,
    SystemReminder,
    ToolCall,
    ToolResult,
    Transcript,
    UserMessage,
)
from core.messages import ToolCallRequest
from core.turns import Turn, estimate_tokens, estimate_turn_tokens, group_turns

# --- random valid transcripts ------------------------------------------------------


@dataclass
class Block:
    """A run of entries the engine appends together; ``kind`` says which."""

    kind: str  # "user", "assistant", "tool", "reminder", "notice"
    entries: list[Entry]


def call(call_id: str, name: str = "file", **arguments: object) -> ToolCallRequest:
    return ToolCallRequest(id=call_id, name=name, arguments=arguments or {"action": "read", "path": call_id})


@st.composite
def tool_block(draw: st.DrawFn, number: int, reuse_ids: bool) -> Block:
    """A ToolCall with 1-3 calls, a result for each in any order, maybe reminders after."""
    count = draw(st.integers(1, 3))
    ids = [f"call_{i}" if reuse_ids else f"t{number}_{i}" for i in range(count)]
    sizes = draw(st.lists(st.integers(0, 3000), min_size=count, max_size=count))
    entries: list[Entry] = [
        ToolCall(text=draw(st.sampled_from(["", "Reading it."])), calls=[call(i) for i in ids])
    ]
    for position in draw(st.permutations(range(count))):
        status = "ok" if position == 0 else "deferred"
        entries.append(ToolResult(call_id=ids[position], name="file", content="r" * sizes[position], status=status))
    for reminder in draw(st.lists(st.booleans(), max_size=2)):
        entries.append(SystemReminder(text="loop", reason="loop") if reminder else StatusNotice(text="n"))
    return Block("tool", entries)


@st.composite
def blocks(draw: st.DrawFn, min_size: int = 0, max_size: int = 25) -> list[Block]:
    reuse_ids = draw(st.booleans())  # some providers number calls per reply: call_0, call_1, ...
    kinds = draw(
        st.lists(
            st.sampled_from(["user", "assistant", "tool", "tool", "tool", "reminder", "notice"]),
            min_size=min_size,
            max_size=max_size,
        )
    )
    out: list[Block] = []
    for number, kind in enumerate(kinds):
        text = draw(st.text(alphabet="abc <>&\n", max_size=300))
        match kind:
            case "user":
                out.append(Block(kind, [UserMessage(text=text or "u")]))
            case "assistant":
                entries: list[Entry] = [AiMessage(text=text)]
                if draw(st.booleans()):
                    entries.append(SystemReminder(text="call a tool", reason="no_tool_call"))
                out.append(Block(kind, entries))
            case "tool":
                out.append(draw(tool_block(number, reuse_ids)))
            case "reminder":
                out.append(Block(kind, [SystemReminder(text="step 2", reason="workflow")]))
            case _:
                out.append(Block(kind, [StatusNotice(text="retrying")]))
    return out


def flatten(parts: list[Block]) -> list[Entry]:
    transcript = Transcript()
    for block in parts:
        for entry in block.entries:
            transcript.append(entry)
    return transcript.entries


def expected_starts(parts: list[Block]) -> list[int]:
    """Where turns start, from the rules applied to whole blocks."""
    starts: list[int] = []
    position = 0
    current: str | None = None
    for block in parts:
        joins = current is not None and (
            block.kind == "notice" or (block.kind == "reminder" and current in ("tool", "assistant", "reminder"))
        )
        if not joins:
            starts.append(position)
            current = block.kind
        position += len(block.entries)
    return starts


def turn_starts(turns: list[Turn]) -> list[int]:
    starts, position = [], 0
    for turn in turns:
        starts.append(position)
        position += len(turn.entries)
    return starts


def owner_of(turns: list[Turn]) -> dict[int, int]:
    """id() of each entry -> index of the turn holding it."""
    return {id(entry): index for index, turn in enumerate(turns) for entry in turn.entries}


# --- properties -------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(blocks())
def test_concatenating_turns_gives_back_the_entries_identically(parts):
    entries = flatten(parts)
    turns = group_turns(entries)
    joined = [entry for turn in turns for entry in turn.entries]
    assert len(joined) == len(entries)
    assert all(a is b for a, b in zip(joined, entries))
    assert all(turn.entries for turn in turns)


@settings(max_examples=300, deadline=None)
@given(blocks())
def test_no_turn_separates_a_tool_call_from_its_results(parts):
    turns = group_turns(flatten(parts))
    where = owner_of(turns)
    for block in parts:
        if block.kind == "tool":
            holders = {where[id(entry)] for entry in block.entries if isinstance(entry, (ToolCall, ToolResult))}
            assert len(holders) == 1


@settings(max_examples=300, deadline=None)
@given(blocks())
def test_every_turn_starts_at_a_boundary_the_rules_define(parts):
    turns = group_turns(flatten(parts))
    assert turn_starts(turns) == expected_starts(parts)
    opening = {
        UserMessage: "user",
        AiMessage: "assistant",
        ToolCall: "tool",
        SystemReminder: "reminder",
        StatusNotice: "notice",
    }
    for turn in turns:
        assert turn.kind == opening[type(turn.entries[0])]
        later = turn.entries[1:]
        assert not any(isinstance(entry, (UserMessage, AiMessage, ToolCall)) for entry in later)
        if turn.kind in ("user", "notice"):
            assert not any(isinstance(entry, SystemReminder) for entry in later)


# --- examples ---------------------------------------------------------------------------


def kinds(turns: list[Turn]) -> list[tuple[str, int]]:
    return [(turn.kind, len(turn.entries)) for turn in turns]


def test_user_message_is_its_own_turn_and_a_reply_keeps_its_no_tool_call_reminder():
    entries = [
        UserMessage(text="task"),
        AiMessage(text="hello"),
        SystemReminder(text="call a tool", reason="no_tool_call"),
        UserMessage(text="more"),
    ]
    assert kinds(group_turns(entries)) == [("user", 1), ("assistant", 2), ("user", 1)]


def test_tool_turn_holds_results_in_any_order_deferred_ones_and_the_reminder_after():
    entries = [
        UserMessage(text="task"),
        ToolCall(calls=[call("a"), call("b"), call("c")]),
        ToolResult(call_id="c", name="file", content="[not executed]", status="deferred"),
        ToolResult(call_id="a", name="file", content="ok"),
        ToolResult(call_id="b", name="file", content="[not executed]", status="deferred"),
        SystemReminder(text="you are looping", reason="loop"),
        StatusNotice(text="retrying"),
        ToolCall(calls=[call("d")]),
        ToolResult(call_id="d", name="file", content="ok"),
    ]
    assert kinds(group_turns(entries)) == [("user", 1), ("tool", 6), ("tool", 2)]


def test_tool_turn_stays_open_until_its_last_result_even_across_a_user_message():
    entries = [
        ToolCall(calls=[call("a"), call("b")]),
        ToolResult(call_id="a", name="file", content="ok"),
        UserMessage(text="interjection"),
        ToolResult(call_id="b", name="file", content="late"),
        AiMessage(text="reply"),
    ]
    assert kinds(group_turns(entries)) == [("tool", 4), ("assistant", 1)]


def test_reused_call_ids_match_the_newest_waiting_call():
    entries = [
        ToolCall(calls=[call("call_0")]),
        ToolResult(call_id="call_0", name="file", content="one"),
        ToolCall(calls=[call("call_0")]),
        ToolResult(call_id="call_0", name="file", content="two"),
    ]
    assert kinds(group_turns(entries)) == [("tool", 2), ("tool", 2)]


def test_orphan_result_joins_the_turn_before_it_or_opens_one_at_the_start():
    orphan = ToolResult(call_id="ghost", name="shell", content="?")
    assert kinds(group_turns([UserMessage(text="u"), orphan])) == [("user", 2)]
    assert kinds(group_turns([orphan, UserMessage(text="u")])) == [("tool", 1), ("user", 1)]


def test_leading_notice_and_reminder_stand_alone_and_later_notices_join():
    entries = [
        StatusNotice(text="starting"),
        SystemReminder(text="step 1", reason="workflow"),
        UserMessage(text="task"),
        StatusNotice(text="retrying"),
        SystemReminder(text="step 2", reason="workflow"),
    ]
    assert kinds(group_turns(entries)) == [("notice", 1), ("reminder", 1), ("user", 2), ("reminder", 1)]


def test_empty_transcript_has_no_turns():
    assert group_turns([]) == []


def test_estimate_counts_four_characters_a_token_plus_overhead():
    assert estimate_tokens(UserMessage(text="x" * 40)) == 14
    assert estimate_tokens(UserMessage(text="")) == 4
    assert estimate_tokens(StatusNotice(text="x" * 400)) == 0
    thinking = AiMessage(text="x" * 40, thinking="y" * 40)
    assert estimate_tokens(thinking) == 24
    # the reminder's <system-reminder> wrapper is part of what the model reads
    assert estimate_tokens(SystemReminder(text="x" * 40)) > estimate_tokens(UserMessage(text="x" * 40))


def test_estimate_counts_tool_call_names_and_json_arguments():
    small = ToolCall(calls=[call("a", "shell", command="ls")])
    large = ToolCall(calls=[call("a", "shell", command="ls " + "x" * 400)])
    assert estimate_tokens(large) - estimate_tokens(small) == 100
    raw = ToolCallRequest(id="a", name="shell", arguments_raw="{" + "x" * 399, parse_error="bad JSON")
    assert estimate_tokens(ToolCall(calls=[raw])) >= 100


def test_turn_estimate_is_the_sum_of_its_entries():
    turn = group_turns([ToolCall(calls=[call("a")]), ToolResult(call_id="a", name="file", content="z" * 800)])[0]
    assert estimate_turn_tokens(turn) == sum(estimate_tokens(entry) for entry in turn.entries)
    assert estimate_turn_tokens(turn) > 200
