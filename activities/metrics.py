"""The agent's metrics from its activities: model calls (latency, tokens, cost, errors by
kind) and tool calls (by tool and outcome, sandbox refusals).

``activity.metric_meter()`` carries the worker's namespace, task queue and activity type
and exports through the worker's SDK runtime (Prometheus with ``--metrics-port``); without
an exporter it is a no-op. Retried attempts count each time: an error metric counts
attempts, not tasks. Names and labels: docs/metrics.md.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from datetime import timedelta
from typing import TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from core.messages import TurnResult
from core.tool_outcome import ToolOutcome

T = TypeVar("T")
REFUSED = "[refused]"  # how a tool says it did not run the call (no sandbox, no approval)
# (name, description) of each counter, declared at zero when a worker starts (worker.py).
MODEL_ERRORS = ("agent_model_errors", "failed model calls, by error kind")
TOKENS_INPUT = ("agent_tokens_input", "input tokens the model read")
TOKENS_OUTPUT = ("agent_tokens_output", "output tokens the model wrote")
TOOL_CALLS = ("agent_tool_calls", "tool calls, by tool and outcome")
SANDBOX_REFUSALS = ("agent_sandbox_refusals", "tool calls refused without running")
COUNTERS = (MODEL_ERRORS, TOKENS_INPUT, TOKENS_OUTPUT, TOOL_CALLS, SANDBOX_REFUSALS)


async def model_call(model: str, call: Awaitable[TurnResult]) -> TurnResult:
    """Await the model call and record it: latency, tokens and cost on success, the error's
    kind on failure."""
    meter = activity.metric_meter().with_additional_attributes({"model": model})
    started = time.monotonic()
    try:
        result = await call
    except ApplicationError as err:
        meter.create_counter(*MODEL_ERRORS).add(
            1, {"kind": err.type or "unknown"})
        raise
    meter.create_histogram_timedelta("agent_model_call_latency_seconds", "model call latency", "duration").record(
        timedelta(seconds=time.monotonic() - started))
    meter.create_counter(*TOKENS_INPUT).add(result.usage.input_tokens)
    meter.create_counter(*TOKENS_OUTPUT).add(result.usage.output_tokens)
    if result.cost_usd:  # the sum is the spend
        meter.create_histogram_float("agent_model_cost_usd", "cost of a model call", "usd").record(result.cost_usd)
    return result


async def tool_call(tool: str, call: Awaitable[ToolOutcome]) -> ToolOutcome:
    """Await the tool call and count it by tool and outcome (ok, error, refused)."""
    meter = activity.metric_meter().with_additional_attributes({"tool": tool})
    result = await call
    outcome = "refused" if result.content.startswith(REFUSED) else result.status
    meter.create_counter(*TOOL_CALLS).add(1, {"outcome": outcome})
    if outcome == "refused":
        meter.create_counter(*SANDBOX_REFUSALS).add(1)
    return result
