import io

from rich.console import Console

from cli.render import preview, render_entry, unwrap
from core.entries import AiMessage, ToolResult
from core.text import terminal_safe
from core.untrusted import wrap_untrusted


def test_people_see_tool_output_without_the_untrusted_wrapper():
    wrapped = wrap_untrusted("line one\nline two", "shell: ls")
    assert unwrap(wrapped) == "line one\nline two"
    assert "untrusted_content" not in preview(wrapped)


def test_output_that_only_looks_wrapped_is_left_alone():
    text = "<untrusted_content fake\nno closing tag"
    assert unwrap(text) == text


def test_long_output_is_previewed_with_a_count_of_what_is_hidden():
    shown = preview("\n".join(f"row {i}" for i in range(20)), lines=3)
    assert shown.splitlines() == ["    row 0", "    row 1", "    row 2", "    … (17 more lines)"]


HOSTILE = (
    "ok\x1b[2J\x1b[H"  # clear the screen, cursor home
    "\x1b]0;pwned\x07"  # set the window title
    "\x1b]52;c;cm0gLXJmIH4=\x07"  # write the clipboard (OSC 52)
    "\x1bP+q544e\x1b\\"  # a DCS query
    "\r\x08\x07\x9b31m done [bold]not markup[/bold]\n\tnext line"
)


def test_terminal_safe_removes_escape_sequences_and_controls_but_keeps_lines():
    assert terminal_safe(HOSTILE) == "ok done [bold]not markup[/bold]\n\tnext line"


def test_hostile_tool_output_reaches_the_terminal_inert(tmp_path):
    console = Console(file=io.StringIO(), force_terminal=True, width=200, color_system=None)
    render_entry(console, ToolResult(call_id="c", name="shell", content=HOSTILE))
    render_entry(console, AiMessage(text=HOSTILE))
    shown = console.file.getvalue()
    assert "\x1b]" not in shown and "\x1bP" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert "[bold]not markup[/bold]" in shown  # shown as text, not interpreted
