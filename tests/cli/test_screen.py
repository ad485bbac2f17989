"""The console sink without Temporal: what ends up on a terminal's screen, or in a pipe."""

from __future__ import annotations

import io

from rich.console import Console

from cli.screen import ConsoleSink, elapsed
from contracts.task import TaskOutcome, TaskState, TaskStatus
from core.entries import ToolCall, ToolResult
from core.messages import ToolCallRequest, Usage
from tests.cli.vt import Screen, strip_ansi

REPLY = "Let me look at the working directory first."


def console(terminal: bool) -> Console:
    return Console(file=io.StringIO(), force_terminal=terminal, force_interactive=terminal, width=80, height=24,
                   color_system="standard" if terminal else None, highlight=False, soft_wrap=True)


def play(sink: ConsoleSink) -> None:
    thinking = TaskStatus(state=TaskState.THINKING, turn=1, usage=Usage(input_tokens=12, output_tokens=3),
                          last_activity="llm · demo · turn 1")
    sink.status(thinking)
    for piece in ("Let me look ", "at the working ", "directory first."):
        sink.delta(1, piece)
    call = ToolCall(seq=1, turn=1, text=REPLY, calls=[ToolCallRequest(id="c1", name="shell", arguments={"command": "ls"})])
    sink.entry(call, thinking.model_copy(update={"state": TaskState.EXECUTING_TOOL}))
    sink.entry(ToolResult(seq=2, turn=1, call_id="c1", name="shell", content="a.txt"), thinking)
    sink.outcome(TaskOutcome(status=TaskState.DONE, turns=1, final_text="done"), 1.0)


def test_a_terminal_shows_the_streamed_reply_once_and_no_status_line_at_the_end():
    shown = console(True)
    sink = ConsoleSink(shown)
    assert sink.live
    play(sink)
    written = shown.file.getvalue()  # type: ignore[attr-defined]
    assert "thinking · turn 1" in written  # the status line was there...
    committed = strip_ansi(written).index("→ shell")
    assert REPLY not in strip_ansi(written)[committed:]  # not even for a moment once it is in the scrollback
    screen = Screen(80).feed(written).text()
    assert screen.count(REPLY) == 1 and "← ok" in screen and "DONE" in screen
    assert "· turn" not in screen  # ...and is gone


def test_a_pipe_gets_the_reply_as_it_streams_once_and_nothing_else():
    piped = console(False)
    sink = ConsoleSink(piped)
    assert not sink.live
    play(sink)
    out = piped.file.getvalue()  # type: ignore[attr-defined]
    assert out.count(REPLY) == 1 and "\x1b" not in out and "· turn" not in out
    assert out.splitlines()[:2] == ["── turn 1 ──", f"model {REPLY}"]


def test_a_retried_model_call_starts_its_reply_over_on_its_own_line_in_a_pipe():
    piped = console(False)
    sink = ConsoleSink(piped)
    sink.delta(1, "First try")
    sink.restart(1)
    sink.delta(1, REPLY)
    lines = piped.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert lines == ["── turn 1 ──", "model First try", "· the model call was retried: its reply starts over", f"model {REPLY}"]


def file_turns() -> list[ToolCall | ToolResult]:
    edit = {"action": "edit", "path": "app.py", "old": "def f():\n    return 1\n", "new": "def f():\n    return 2\n"}
    write = {"action": "write", "path": "notes.md", "content": "# Notes\nsecond line\n"}
    return [
        ToolCall(seq=1, turn=1, calls=[ToolCallRequest(id="c1", name="file", arguments=edit)]),
        ToolResult(seq=2, turn=1, call_id="c1", name="file", content="Made 1 replacement in app.py."),
        ToolCall(seq=3, turn=2, calls=[ToolCallRequest(id="c2", name="file", arguments=write)]),
        ToolResult(seq=4, turn=2, call_id="c2", name="file", content="Wrote 20 bytes to notes.md."),
    ]


def test_file_edits_and_writes_are_shown_as_unified_diffs_under_a_numbered_turn():
    piped = console(False)
    sink = ConsoleSink(piped)
    status = TaskStatus(state=TaskState.EXECUTING_TOOL, turn=2)
    for entry in file_turns():
        sink.entry(entry, status)
    lines = [line.strip() for line in piped.file.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert lines[:7] == ["── turn 1 ──", "→ file edit app.py", "--- a/app.py", "+++ b/app.py", "@@ @@", "def f():",
                         "-    return 1"]
    assert lines[7] == "+    return 2" and '"old"' not in "".join(lines)  # no JSON arguments
    assert lines[lines.index("── turn 2 ──"):][1:6] == [
        "→ file write notes.md", "--- a/notes.md", "+++ b/notes.md", "@@ the whole file as written, 2 lines @@", "+# Notes"]


def test_a_diff_on_a_terminal_is_coloured():
    shown = console(True)
    sink = ConsoleSink(shown, live=False)
    for entry in file_turns()[:2]:
        sink.entry(entry, TaskStatus(state=TaskState.EXECUTING_TOOL, turn=1))
    written = shown.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[31m-    return 1" in written and "\x1b[32m+    return 2" in written  # red, green
    assert Screen(80).feed(written).text().count("── turn 1 ──") == 1


def test_elapsed_time_reads_at_a_glance():
    assert [elapsed(s) for s in (4.2, 75, 3725)] == ["4s", "1m 15s", "1h 02m"]
