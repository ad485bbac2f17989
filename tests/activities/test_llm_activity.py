"""The LLM activity on its own (Temporal's ActivityEnvironment): the circuit breaker in front of
the provider, and errors translated into ApplicationError."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from contracts.activities import ContextPage, LlmCallInput, PromptParams
from core.entries import ToolCall, ToolResult, UserMessage
from core.errors import ErrorKind
from core.messages import ToolCallRequest
from core.settings import ProviderSettings
from fakes.scripted import ScriptedModelServer, error, tool
from providers.circuit import CircuitBreaker
from runtime.store import ContextStore
from tests.configured import llm_activities


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def call_input(turn: int) -> LlmCallInput:
    return LlmCallInput(
        task_id="t1", turn=turn, provider="openai", model="m", prompt=PromptParams(workspace="/tmp", date="2026-01-01"),
        tool_names=["message"], stream=False, context_id="ctx-1", total=1,
        new_entries=[UserMessage(seq=0, text="hi")],
    )


async def test_the_circuit_breaker_skips_a_down_endpoint_then_probes_it(tmp_path):
    clock = Clock()
    steps = [error(503, "down")] * 3 + [tool("message", type="result", text="back")]
    with ScriptedModelServer(steps) as model:
        llm = llm_activities(ProviderSettings(openai_base_url=model.url), ContextStore(tmp_path / "c.db"),
                            breaker=CircuitBreaker(failure_threshold=3, window=5, cooldown_s=30, clock=clock))
        env = ActivityEnvironment()
        for turn in range(3):
            with pytest.raises(ApplicationError) as err:
                await env.run(llm.call_llm, call_input(turn))
            assert not err.value.non_retryable and "503" in err.value.message
        with pytest.raises(ApplicationError) as err:
            await env.run(llm.call_llm, call_input(3))
        assert err.value.type == ErrorKind.CIRCUIT_OPEN and model.hits() == 3  # skipped, not called
        assert err.value.next_retry_delay.total_seconds() == pytest.approx(30, abs=1)
        clock.now = 31  # the cooling period is over: one probe goes through and succeeds
        result = await env.run(llm.call_llm, call_input(4))
        assert result.tool_calls[0].name == "message" and model.hits() == 4
        assert llm.breaker.state(llm._endpoint("openai")) == "closed"


async def test_a_non_retryable_provider_error_is_a_non_retryable_application_error(tmp_path):
    with ScriptedModelServer([error(403, "forbidden")]) as model:
        llm = llm_activities(ProviderSettings(openai_base_url=model.url), ContextStore(tmp_path / "c.db"))
        with pytest.raises(ApplicationError) as err:
            await ActivityEnvironment().run(llm.call_llm, call_input(1))
    assert err.value.non_retryable and "openai 403: forbidden" in err.value.message


def later_call(**fields) -> LlmCallInput:
    """Turn 3 of a task whose run started at seq 2 (earlier runs hold seqs 0-1)."""
    base = dict(
        task_id="t1", turn=3, provider="openai", model="m", prompt=PromptParams(workspace="/tmp", date="2026-01-01"),
        tool_names=["message"], stream=False, context_id="ctx-2", total=4, base=2,
        new_entries=[UserMessage(seq=3, text="and now this")],
    )
    return LlmCallInput(**{**base, **fields})


RUN_ENTRIES = [UserMessage(seq=2, text="second request"), UserMessage(seq=3, text="and now this")]
# A large output whose blob lived on a lost disk: the history's preview is what the model gets.
LOST_BLOB = ToolResult(seq=1, call_id="c1", name="shell", content="PREVIEW of 20000 characters", blob="0" * 64)
PREFIX = [
    UserMessage(seq=0, text="the original request"),
    ToolCall(seq=0, calls=[ToolCallRequest(id="c1", name="shell", arguments={"command": "cat big.log"})]),
    LOST_BLOB,
]


def user_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


async def test_a_worker_with_an_empty_store_reads_what_it_lacks_from_the_workflow(tmp_path):
    asked: list[tuple[str, int]] = []

    async def workflow(workflow_id: str, run_id: str | None, after_seq: int) -> ContextPage:
        asked.append((workflow_id, after_seq))
        return ContextPage(base=2, prefix=PREFIX, entries=[e for e in RUN_ENTRIES if e.seq >= after_seq])

    with ScriptedModelServer([tool("message", type="result", text="ok")]) as model:
        llm = llm_activities(ProviderSettings(openai_base_url=model.url), ContextStore(tmp_path / "c.db"), history=workflow)
        await ActivityEnvironment().run(llm.call_llm, later_call())
    assert asked == [("t1", 0)]  # one query, nothing resent through the history
    assert user_texts(model.requests[0]) == ["the original request", "second request", "and now this"]
    tool_results = [m["content"] for m in model.requests[0]["messages"] if m["role"] == "tool"]
    assert tool_results == ["PREVIEW of 20000 characters"]


async def test_without_the_workflow_a_gap_asks_for_a_resend_and_the_prefix_stands_in(tmp_path):
    store = ContextStore(tmp_path / "c.db")
    with ScriptedModelServer([tool("message", type="result", text="ok")]) as model:
        llm = llm_activities(ProviderSettings(openai_base_url=model.url), store, history=None)
        with pytest.raises(ApplicationError) as err:
            await ActivityEnvironment().run(llm.call_llm, later_call())
        assert err.value.type == ErrorKind.CONTEXT_GAP and err.value.non_retryable
        await ActivityEnvironment().run(llm.call_llm, later_call(new_entries=RUN_ENTRIES, prefix=PREFIX))
    assert user_texts(model.requests[0]) == ["the original request", "second request", "and now this"]
    assert store.get_prefix("ctx-2") == (2, PREFIX)  # kept: the next delta call needs no resend
