from core.entries import (
    AiMessage,
    StatusNotice,
    SystemReminder,
    ToolCall,
    ToolResult,
    Transcript,
    UserMessage,
    to_chat_messages,
)
from core.messages import ThinkingPart, ToolCallRequest


def test_transcript_append_assigns_consecutive_sequence_numbers():
    transcript = Transcript()
    first = transcript.append(UserMessage(text="hi"))
    second = transcript.append(SystemReminder(text="note"))
    assert (first.seq, second.seq) == (0, 1)
    assert transcript.since(1) == [second]
    assert transcript.since(5) == []


def test_llm_view_maps_each_entry_kind_and_hides_status_notices():
    call = ToolCallRequest(id="c1", name="shell", arguments={"command": "ls"})
    entries = [
        UserMessage(text="task"),
        ToolCall(text="looking", calls=[call], thinking="hmm"),
        ToolResult(call_id="c1", name="shell", content="a.txt"),
        StatusNotice(text="retrying"),
        SystemReminder(text="be brief"),
        AiMessage(text="plain reply"),
    ]
    messages = to_chat_messages(entries)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert messages[1].tool_calls == [call] and messages[1].thinking == [ThinkingPart(text="hmm")]
    assert messages[2].tool_call_id == "c1" and messages[2].content == "a.txt"
    assert messages[3].content == "<system-reminder>be brief</system-reminder>"


def test_entries_round_trip_through_json_by_kind():
    from pydantic import TypeAdapter

    from core.entries import Entry

    adapter = TypeAdapter(list[Entry])
    entries = [UserMessage(text="a", seq=0), ToolResult(call_id="x", name="file", content="c", seq=1)]
    restored = adapter.validate_json(adapter.dump_json(entries))
    assert restored == entries
    assert isinstance(restored[1], ToolResult)
