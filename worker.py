"""A worker process for the task queue: `python worker.py`.

Runs the task workflow and the LLM and tool activities. Provider endpoints
and keys are read from this process's environment (see README).
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid

from temporalio.client import Client
from temporalio.worker import Worker

from activities.llm import LlmActivities, ProviderSettings
from activities.log import configure_logging, get_logger
from activities.tools import run_tool
from temporal.client import TemporalUnavailable, connect
from temporal.server import ServerError
from workflows.models import DEFAULT_TASK_QUEUE
from workflows.task import AgentTaskWorkflow


def task_queue() -> str:
    return os.environ.get("AGENT_TASK_QUEUE", DEFAULT_TASK_QUEUE)


def build_worker(
    client: Client,
    *,
    queue: str | None = None,
    settings: ProviderSettings | None = None,
    max_concurrent_activities: int = 200,
) -> Worker:
    llm = LlmActivities(settings)
    return Worker(
        client,
        task_queue=queue or task_queue(),
        workflows=[AgentTaskWorkflow],
        activities=[llm.call_llm, run_tool],
        max_concurrent_activities=max_concurrent_activities,
        identity=f"agent-worker-{os.getpid()}-{uuid.uuid4().hex[:6]}",
    )


async def main() -> int:
    configure_logging()
    log = get_logger(component="worker")
    try:
        client = await connect()
    except (TemporalUnavailable, ServerError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    worker = build_worker(client)
    log.info("worker started", task_queue=worker.task_queue if hasattr(worker, "task_queue") else task_queue())
    await worker.run()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except KeyboardInterrupt:
        sys.exit(130)
