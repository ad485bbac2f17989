"""Long answers split at a platform's limit: every piece fits, nothing is lost, code stays code."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from channels.base import split_text


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
