"""The conversation's own line editing (cli/typeahead.py), key by key, without a terminal."""

from __future__ import annotations

from cli.slash import is_command
from cli.typeahead import Keys


def typed(*chunks: str) -> Keys:
    keys = Keys()
    for chunk in chunks:
        keys.feed(chunk)
    return keys


def test_backspace_and_ctrl_u_edit_the_line_and_enter_queues_it():
    keys = typed("fix teh", "\x7f\x7f\x7fthe", " tests\r", "drop this\x15keep ", "this")
    assert keys.lines == ["fix the tests"] and keys.draft == "keep this"


def test_arrow_keys_type_nothing_and_an_empty_line_is_no_message_while_a_task_runs():
    keys = typed("\x1b[A\x1b[Dyes\x1bOB\n", "\n", "  \n")
    assert keys.lines == ["yes"]
    keys.keep_blank = True  # at the prompt, Enter alone is a line
    keys.feed("\n")
    assert keys.lines == ["yes", ""]


def test_ctrl_d_ends_the_input_only_on_an_empty_line():
    keys = typed("half\x04")
    assert not keys.ended.is_set() and keys.draft == "half"
    keys.feed("\x15\x04")
    assert keys.ended.is_set()


def test_every_line_typed_is_said_and_drawn_whole_first_and_the_draft_after_each_chunk():
    said, drawn = [], []
    keys = Keys()
    keys.on_line, keys.on_draft = said.append, drawn.append
    keys.feed("one\ntw")  # a line that came in one read is drawn before it is taken: never unseen
    assert said == ["one"] and drawn == ["one", "tw"]


def test_queued_messages_go_as_one_and_a_slash_command_alone():
    keys = typed("first\n", "second\n", "/cost\n", "third\n")
    assert keys.next_message(is_command) == "first\nsecond"
    assert keys.next_message(is_command) == "/cost"
    assert keys.next_message(is_command) == "third" and keys.lines == []
