"""What each LLM call carries: only the entries the context store may not have (pure, no Temporal)."""

from __future__ import annotations

from contracts.task import LoopState
from core.entries import ToolCall, ToolResult, Transcript, UserMessage, entry_digest
from core.messages import ToolCallRequest
from workflows.sync import ContextSync


def setup() -> tuple[LoopState, Transcript, ContextSync]:
    state = LoopState()
    return state, Transcript(state.entries, base=state.base), ContextSync(state)


def test_the_first_call_carries_everything_and_later_calls_only_what_is_new():
    state, transcript, sync = setup()
    transcript.append(UserMessage(text="do it"))
    new, expect = sync.delta(transcript)
    assert [e.seq for e in new] == [0] and expect == {}
    sync.synced_to(transcript.total)
    transcript.append(ToolCall(calls=[ToolCallRequest(id="c", name="shell", arguments={"command": "ls"})]))
    new, _ = sync.delta(transcript)
    assert [e.seq for e in new] == [1]
    assert state.synced == 1  # the state is the loop state's own: continue-as-new carries it


def test_a_result_the_tool_activity_stored_travels_as_a_digest_not_as_content():
    state, transcript, sync = setup()
    transcript.append(UserMessage(text="do it"))
    sync.synced_to(transcript.total)
    result = transcript.append(ToolResult(call_id="c", name="shell", content="x" * 5000))
    sync.tool_wrote(result, entry_digest(result))
    new, expect = sync.delta(transcript)
    assert new == [] and expect == {1: entry_digest(result)}
    sync.synced_to(transcript.total)
    assert state.tool_written == {}  # verified by the call: nothing left to check


def test_a_stored_digest_that_does_not_match_the_recorded_entry_is_not_trusted():
    _, transcript, sync = setup()
    result = transcript.append(ToolResult(call_id="c", name="shell", content="recorded"))
    other = result.model_copy(update={"content": "what the store got"})
    sync.tool_wrote(result, entry_digest(other))
    new, expect = sync.delta(transcript)
    assert [e.seq for e in new] == [0] and expect == {}


def test_a_full_resend_carries_every_entry_this_run_holds():
    state = LoopState(base=10, synced=12)
    transcript = Transcript(state.entries, base=state.base)
    for text in ("a", "b", "c"):
        transcript.append(UserMessage(text=text))
    sync = ContextSync(state)
    assert [e.seq for e in sync.delta(transcript)[0]] == [12]
    assert [e.seq for e in sync.full(transcript)[0]] == [10, 11, 12]
