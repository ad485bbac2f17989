"""Scripted scenarios whose histories are recorded and replayed on every change.

Record (or re-record after an intended workflow change):
    python -m tests.workflows.replay_scenarios
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from providers.scripted import Step, error, text, tool
from temporal.server import temporal_cli
from workflows.task import AgentTaskWorkflow

from tests.workflows.harness import make_input, scripted_worker

HISTORIES = Path(__file__).resolve().parent.parent / "histories"

SCENARIOS: dict[str, list[Step]] = {
    "full_loop": [
        text("thinking out loud"),
        Step(tool_calls=[("file", {"action": "write", "path": "a.txt", "content": "A"}),
                         ("shell", {"command": "cat a.txt"})]),
        tool("teleport", to="mars"),
        Step(tool_calls=[("shell", '{"command": ')]),
        error(503, "overloaded"),
        tool("shell", command="cat a.txt"),
        tool("message", type="info", text="almost there"),
        tool("message", type="result", text="done"),
    ],
}


async def record_history(client: Client, task_queue: str, workspace: Path, steps: list[Step]) -> str:
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await client.start_workflow(
            AgentTaskWorkflow.run, make_input(workspace, "replay scenario"),
            id=f"replay-{uuid.uuid4().hex[:8]}", task_queue=task_queue,
        )
        await handle.result()
        model.assert_consumed()
    history = await handle.fetch_history()
    return history.to_json()


async def main() -> None:
    HISTORIES.mkdir(exist_ok=True)
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli(), data_converter=pydantic_data_converter
    )
    try:
        for name, steps in SCENARIOS.items():
            with tempfile.TemporaryDirectory() as ws:
                body = await record_history(env.client, f"record-{name}", Path(ws), steps)
            (HISTORIES / f"{name}.json").write_text(body)
            print(f"recorded {name}")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
