"""Token estimates for a server that reports no usage, and the estimated mark through sums."""

from __future__ import annotations

from core.messages import ThinkingPart, ToolCallRequest, TurnResult, Usage
from providers.usage import estimate_tokens, estimate_usage, with_estimate


def test_an_estimate_is_characters_over_four_rounded_up():
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]


def test_estimate_usage_counts_the_request_and_the_reply_and_says_so():
    assert estimate_usage("a" * 40, "b" * 7) == Usage(input_tokens=10, output_tokens=2, estimated=True)


def test_a_sum_is_estimated_when_either_part_is():
    reported, guessed = Usage(input_tokens=5, output_tokens=1), Usage(input_tokens=7, output_tokens=2, estimated=True)
    assert (reported + guessed).estimated and (guessed + reported).estimated
    assert not (reported + reported).estimated
    assert (reported + guessed).total_tokens == 15


def test_usage_recorded_before_the_mark_reads_as_reported():
    assert Usage.model_validate({"input_tokens": 3, "output_tokens": 4}).estimated is False


def test_with_estimate_fills_only_what_the_server_left_out():
    call = ToolCallRequest(id="c", name="shell", arguments={"command": "ls"})
    reply = TurnResult(content="abcd", tool_calls=[call], thinking=[ThinkingPart(text="hmm")])
    nothing = with_estimate(reply, "r" * 100).usage
    assert nothing == Usage(input_tokens=25, output_tokens=-(-len('hmmabcdshell{"command": "ls"}') // 4), estimated=True)
    only_prompt = with_estimate(reply.model_copy(update={"usage": Usage(input_tokens=900)}), "r" * 100).usage
    assert (only_prompt.input_tokens, only_prompt.output_tokens, only_prompt.estimated) == (900, 8, True)
    both = reply.model_copy(update={"usage": Usage(input_tokens=900, output_tokens=3)})
    assert with_estimate(both, "r" * 100) is both


def test_an_empty_reply_with_a_reported_prompt_is_left_alone():
    quiet = TurnResult(usage=Usage(input_tokens=50))
    assert with_estimate(quiet, "r" * 100).usage == Usage(input_tokens=50)
