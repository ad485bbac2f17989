"""The LLM activity on its own (Temporal's ActivityEnvironment): the circuit breaker in front of
the provider, and errors translated into ApplicationError."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.llm import CIRCUIT_OPEN, LlmActivities, ProviderSettings
from contracts.activities import LlmCallInput, PromptParams
from core.entries import UserMessage
from fakes.scripted import ScriptedModelServer, error, tool
from providers.circuit import CircuitBreaker
from runtime.store import ContextStore


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
        llm = LlmActivities(ProviderSettings(openai_base_url=model.url), ContextStore(tmp_path / "c.db"),
                            breaker=CircuitBreaker(failure_threshold=3, window=5, cooldown_s=30, clock=clock))
        env = ActivityEnvironment()
        for turn in range(3):
            with pytest.raises(ApplicationError) as err:
                await env.run(llm.call_llm, call_input(turn))
            assert not err.value.non_retryable and "503" in err.value.message
        with pytest.raises(ApplicationError) as err:
            await env.run(llm.call_llm, call_input(3))
        assert err.value.type == CIRCUIT_OPEN and model.hits() == 3  # skipped, not called
        assert err.value.next_retry_delay.total_seconds() == pytest.approx(30, abs=1)
        clock.now = 31  # the cooling period is over: one probe goes through and succeeds
        result = await env.run(llm.call_llm, call_input(4))
        assert result.tool_calls[0].name == "message" and model.hits() == 4
        assert llm.breaker.state(llm._endpoint("openai")) == "closed"


async def test_a_non_retryable_provider_error_is_a_non_retryable_application_error(tmp_path):
    with ScriptedModelServer([error(403, "forbidden")]) as model:
        llm = LlmActivities(ProviderSettings(openai_base_url=model.url), ContextStore(tmp_path / "c.db"))
        with pytest.raises(ApplicationError) as err:
            await ActivityEnvironment().run(llm.call_llm, call_input(1))
    assert err.value.non_retryable and "openai 403: forbidden" in err.value.message
