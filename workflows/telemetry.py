"""The task's own span: ``invoke_agent``, recorded once when the task ends.

Workflow code: replay-safe because it goes through the TracingInterceptor's workflow
span support (``temporalio.contrib.opentelemetry.workflow``), which records nothing
while replaying. Without that interceptor, or when the workflow was started by an
untraced client (no parent span), it records nothing at all. The exporters, the
interceptor and the activity spans live in ``temporal/tracing.py``.
"""

from __future__ import annotations

from opentelemetry import trace
from temporalio import workflow
from temporalio.contrib.opentelemetry import workflow as otel_workflow

AGENT_NAME = "durable-agent"


def record_task_span(
    *,
    model: str,
    provider: str,
    status: str,
    turns: int,
    input_tokens: int,
    output_tokens: int,
    agent_name: str = AGENT_NAME,
) -> None:
    """Call once from workflow code, when the task ends. Names, counts and statuses only."""
    if trace.get_current_span() is trace.INVALID_SPAN:
        return
    workflow_id = workflow.info().workflow_id
    otel_workflow.completed_span(
        f"invoke_agent {agent_name}",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent_name,
            "gen_ai.conversation.id": workflow_id,
            "gen_ai.provider.name": provider,
            "gen_ai.system": provider,
            "gen_ai.request.model": model,
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
            "agent.workflow_id": workflow_id,
            "agent.task.status": status,
            "agent.turns": turns,
            "agent.usage.total_tokens": input_tokens + output_tokens,
        },
    )
