"""Text in Markdown code renders as itself: the fence outgrows the text's backticks, and what
a page would hide is shown by its code point. The rendering in the Temporal UI itself is
tests/ui/test_temporal_ui.py's."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from core.markdown import code_block, code_span, visible

COMMONMARK = MarkdownIt("commonmark", {"typographer": True}).enable(["replacements", "smartquotes"])
TRICKY = [
    "rm -rf logs/__old__ && git push --force origin main",
    "echo ```; rm *x* `` ` ` ````",
    "**bold** *it* _u_ ~~s~~ [l](http://x) -- --- ... 'q' \"dq\"",
    "<img src=x onerror=alert(1)> <script>alert(1)</script> &amp;",
    "cat <<'EOF' > run.sh\n  __init__ --force\n```\n    indented\nEOF",
    "`starts and ends with a backtick`",
]


def rendered_code(markdown: str) -> str:
    """The text of the first code element CommonMark (with typographer) renders."""
    tokens = COMMONMARK.parse(markdown)
    for token in tokens:
        if token.type in ("fence", "code_block"):
            return token.content.removesuffix("\n")
        for child in token.children or ():
            if child.type == "code_inline":
                return child.content
    raise AssertionError(f"no code in {markdown!r}")


@pytest.mark.parametrize("text", TRICKY)
def test_a_code_block_renders_as_exactly_its_text(text):
    assert rendered_code(code_block(text)) == text


@pytest.mark.parametrize("text", TRICKY)
def test_a_code_span_renders_as_its_text_on_one_line(text):
    assert rendered_code(code_span(text)) == " ".join(text.split())


def test_the_fence_is_longer_than_any_backtick_run_in_the_text():
    block = code_block("a ```` b")
    assert block.startswith("`````\n") and block.endswith("\n`````")
    assert code_span("x `` y") == "```x `` y```"


def test_characters_a_page_would_hide_or_reorder_are_shown_by_code_point():
    text = "rm -rf /tmp/x\u202e/\u200bkeep\u00a0me\r\x1b[31m\tand\nmore"
    assert visible(text) == "rm -rf /tmp/x⟨U+202E⟩/⟨U+200B⟩keep⟨U+00A0⟩me⟨U+000D⟩⟨U+001B⟩[31m\tand\nmore"
    assert visible("plain ascii, ünïcödé 日本") == "plain ascii, ünïcödé 日本"


def test_empty_text_has_no_span_and_an_empty_block():
    assert code_span(" \n ") == ""
    assert rendered_code(code_block("")) == ""
