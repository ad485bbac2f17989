"""A model that answers badly for a while: the context overflows its window, or the
provider is down for longer than one call's retries. The task recovers, visibly."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from activities.llm import RETRY_AFTER_CAP, to_application_error
from contracts.task import TaskState
from core.entries import StatusNotice
from core.errors import ErrorKind
from fakes.scripted import error, tool
from fakes.step import Step
from providers.errors import ProviderError
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start
from workflows.task import AgentTaskWorkflow

OVERFLOW = ("This model's maximum context length is 4096 tokens. However, your messages resulted in "
            "5120 tokens. Please reduce the length of the messages.")


async def notices(handle) -> list[str]:
    page = await handle.query(AgentTaskWorkflow.events, 0)
    return [e.text for e in page.entries if isinstance(e, StatusNotice)]


async def test_a_context_overflow_compacts_to_the_servers_window_and_retries(client, task_queue, workspace):
    steps = [error(400, OVERFLOW), tool("message", type="result", text="it fits now")]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace, context_window=128_000))
        outcome = await outcome_of(handle)
        said = await notices(handle)
    assert outcome.status == TaskState.DONE and outcome.final_text == "it fits now"
    assert any("window is 4096 tokens" in n and "compacting to ~3686 tokens" in n for n in said)
    assert model.requests[1]["max_tokens"] <= 3686  # the reply asked for fits what is left


async def test_a_context_that_never_fits_fails_with_that_reason(client, task_queue, workspace):
    steps = [error(400, OVERFLOW), error(400, OVERFLOW)]
    async with scripted_worker(client, task_queue, steps):
        outcome = await outcome_of(await start(client, task_queue, make_input(workspace)))
    assert outcome.status == TaskState.FAILED and outcome.failure == "context_overflow"
    assert "does not fit the model's window even compacted to ~3686 tokens" in (outcome.error or "")


async def test_a_provider_that_is_down_for_a_while_is_waited_out_visibly(client, task_queue, workspace):
    down = [error(503, "upstream unavailable")] * 4  # two rounds of two attempts
    steps = [*down, tool("message", type="result", text="back again")]
    inp = make_input(workspace, llm_attempts=2, provider_pause_s=2, provider_wait_s=120)
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, inp)
        seen: set[TaskState] = set()
        while not (await handle.describe()).close_time:
            status = await handle.query(AgentTaskWorkflow.status)
            seen.add(status.state)
            if status.state == TaskState.WAITING_PROVIDER:
                assert "next attempt at" in (status.last_activity or "")
            await asyncio.sleep(0.1)
        outcome = await outcome_of(handle)
        said = await notices(handle)
    assert TaskState.WAITING_PROVIDER in seen
    assert outcome.status == TaskState.DONE and outcome.final_text == "back again"
    assert any("is not answering" in n for n in said) and any("answered again after" in n for n in said)


async def test_a_provider_down_past_the_horizon_fails_the_task(client, task_queue, workspace):
    steps = [error(503, "upstream unavailable")] * 20
    inp = make_input(workspace, llm_attempts=1, provider_pause_s=1, provider_wait_s=3)
    async with scripted_worker(client, task_queue, steps):
        outcome = await asyncio.wait_for(outcome_of(await start(client, task_queue, inp)), 60)
    assert outcome.status == TaskState.FAILED and outcome.failure == "provider"
    assert "upstream unavailable" in (outcome.error or "")


def test_retry_after_is_honoured_up_to_a_cap():
    hour = ProviderError("slow down", provider="openai", retryable=True, retry_after_s=3600, kind=ErrorKind.RATE_LIMITED)
    assert to_application_error(hour).next_retry_delay == RETRY_AFTER_CAP == timedelta(minutes=2)
    short = ProviderError("slow down", provider="openai", retryable=True, retry_after_s=3, kind=ErrorKind.RATE_LIMITED)
    assert to_application_error(short).next_retry_delay == timedelta(seconds=3)


def test_the_overflow_type_is_the_same_on_both_sides_of_the_activity():
    failure = to_application_error(
        ProviderError(OVERFLOW, provider="vllm", retryable=False, kind=ErrorKind.CONTEXT_OVERFLOW))
    assert failure.type == ErrorKind.CONTEXT_OVERFLOW and failure.details == ({"context_window": 4096},)


async def test_an_unknown_model_with_no_usage_is_still_stopped_by_the_cost_limit(client, task_queue, workspace):
    steps = [Step(tool_calls=[("shell", {"command": f"echo {i}"})], report_usage=False) for i in range(30)]
    inp = make_input(workspace, model="mystery-model-7b", cost_limit_usd=0.001, max_iterations=40)
    async with scripted_worker(client, task_queue, steps):
        outcome = await outcome_of(await start(client, task_queue, inp))
    assert outcome.status == TaskState.FAILED and outcome.failure == "cost_limit"
    assert outcome.usage.estimated and outcome.cost_estimated and outcome.cost_usd > 0.001
    assert outcome.turns < 30
