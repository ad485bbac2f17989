from cli.render import preview, unwrap
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
