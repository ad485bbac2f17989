"""How a reply's calls run (core/reply.py): reads together, one other call alone, in order."""

from __future__ import annotations

from core.messages import ToolCallRequest
from core.reply import split_reply


def calls(kinds: str) -> list[ToolCallRequest]:
    """``r`` a parallel read, ``w`` any other call: ``"rrwrw"``."""
    return [ToolCallRequest(id=f"{k}{i}", name="file", parallel=k == "r") for i, k in enumerate(kinds)]


def shape(kinds: str) -> tuple[str, ...]:
    reply = split_reply(calls(kinds), lambda c: c.parallel)
    ids = lambda group: "".join(c.id for c in group)  # noqa: E731
    return ids(reply.before), reply.single.id if reply.single else "", ids(reply.after), ids(reply.deferred)


def test_reads_before_the_first_other_call_run_together_and_then_it_alone():
    assert shape("rrrrrw") == ("r0r1r2r3r4", "w5", "", "")


def test_reads_right_after_the_other_call_run_after_it_and_the_next_other_call_is_deferred():
    assert shape("rwrrwr") == ("r0", "w1", "r2r3", "w4r5")


def test_a_reply_of_reads_has_no_single_call_and_one_of_others_runs_the_first():
    assert shape("rrr") == ("r0r1r2", "", "", "")
    assert shape("www") == ("", "w0", "", "w1w2")


def test_the_calls_that_run_are_in_the_models_order():
    reply = split_reply(calls("rrwrrww"), lambda c: c.parallel)
    assert [c.id for c in reply.running] + [c.id for c in reply.deferred] == [c.id for c in calls("rrwrrww")]
