"""Long answers split at a platform's limit: every piece fits, nothing is lost, code stays code."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from channels.base import code_html, split_text
from fakes.telegram_api import parse_html


def test_a_10000_character_answer_splits_under_telegrams_limit_at_paragraphs():
    text = "\n\n".join(f"Paragraph {i}: " + "word " * 60 for i in range(33))
    pieces = split_text(text, 4096)
    assert len(text) > 10_000 and len(pieces) == 3
    assert all(len(p) <= 4096 for p in pieces)
    assert all(p.startswith("Paragraph") for p in pieces)
    assert " ".join(pieces).split() == text.split()


def test_a_code_block_cut_in_two_is_closed_and_reopened():
    text = "Here:\n```\n" + "\n".join(f"line {i}" for i in range(400)) + "\n```\ndone"
    pieces = split_text(text, 1000)
    assert all(len(p) <= 1000 for p in pieces)
    assert all(p.count("```") % 2 == 0 for p in pieces)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab `\n", max_size=3000), st.integers(min_value=20, max_value=500))
def test_every_piece_fits_and_nothing_is_lost(text, limit):
    pieces = split_text(text, limit)
    assert all(len(p) <= limit for p in pieces)
    kept = lambda t: "".join(t.replace("`", "").split())  # every character but the cut's spaces and fences
    assert kept("".join(pieces)) == kept(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab <>&;`\n#x1")), max_size=80))
def test_any_text_is_html_telegram_accepts_and_reads_back_without_its_code_marks(text):
    parsed = parse_html(code_html(text))
    assert not isinstance(parsed, str), parsed
    assert parsed[0] == _unmarked(text)


def _unmarked(text: str) -> str:
    """What the chat shows of ``text``: fences and the backticks of inline code gone (inside a
    fence, backticks are code), the rest as written."""
    shown, at = [], 0
    for fence in re.finditer(r"```[\w+.-]*\n?(.*?)```", text, flags=re.S):
        shown += [re.sub(r"`([^`\n]+)`", r"\1", text[at:fence.start()]), fence.group(1).rstrip("\n")]
        at = fence.end()
    return "".join([*shown, re.sub(r"`([^`\n]+)`", r"\1", text[at:])])
