"""Engine overhead: a 20-turn scripted task vs. the same 20 turns as bare activity round trips.

    python -m benchmarks.turn_overhead [--turns 20] [--repeat 3]

Both run in the same process against the same embedded dev server (in memory)
and the same scripted model server:
- agent: the real task workflow (transcript, loop detection, single-step, ...)
- floor: a workflow with no agent logic that makes the same activity calls
  (the LLM activity against the scripted model, then the tool activity) 20 times
- noop floor: 2 no-op activity round trips per turn (Temporal alone)
Prints the median wall time of each and the agent/floor ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from activities.llm import LlmActivities
    from activities.prompt import PromptActivities
    from activities.tools import ToolActivities
    from benchmarks.common import quiet_logging
    from contracts.activities import LLM_ACTIVITY, TOOL_ACTIVITY, LlmCallInput, PromptParams, ToolCallInput
    from contracts.task import TaskInput
    from core.entries import UserMessage
    from core.messages import TurnResult
    from core.settings import ProviderSettings
    from fakes.scripted import ScriptedModelServer, tool
    from runtime.secrets import SecretStore
    from runtime.settings import load_settings
    from runtime.store import ContextStore
    from temporal.plugin import AgentPlugin
    from temporal.server import start_local_env
    from tools.base import ToolOutcome
    from workflows.task import AgentTaskWorkflow

TIMEOUT = timedelta(seconds=60)


@activity.defn(name="noop")
async def noop(turn: int) -> int:
    return turn


@workflow.defn
class FloorWorkflow:
    """The same activity calls as the agent's turns, with none of its logic."""

    @workflow.run
    async def run(self, args: tuple[str, int]) -> int:
        workspace, turns = args
        for turn in range(1, turns + 1):
            result = await workflow.execute_activity(
                LLM_ACTIVITY,
                LlmCallInput(
                    task_id="floor", turn=turn, provider="openai", model="bench",
                    prompt=PromptParams(workspace=workspace, date="2026-01-01"),
                    tool_names=["message", "shell", "file"], stream=False,
                    context_id=f"floor-{workflow.info().run_id}", total=1,
                    new_entries=[UserMessage(seq=0, text="bench")],
                ),
                result_type=TurnResult, start_to_close_timeout=TIMEOUT,
            )
            await workflow.execute_activity(
                TOOL_ACTIVITY,
                ToolCallInput(task_id="floor", turn=turn, workspace=workspace, call=result.tool_calls[0],
                              approval="never"),
                result_type=ToolOutcome, start_to_close_timeout=TIMEOUT,
            )
        return turns


@workflow.defn
class NoopFloorWorkflow:
    @workflow.run
    async def run(self, turns: int) -> int:
        for turn in range(turns):
            for _ in range(2):
                await workflow.execute_activity(noop, turn, start_to_close_timeout=TIMEOUT)
        return turns


def script(turns: int) -> list:
    steps = [tool("file", action="read", path=f"notes{i}.txt") for i in range(turns - 1)]
    return steps + [tool("message", type="result", text="benchmark done")]


async def timed(coro) -> float:
    started = time.perf_counter()
    await coro
    return time.perf_counter() - started


async def run_agent(client: Client, queue: str, workspace: str, turns: int) -> None:
    outcome = await client.execute_workflow(
        AgentTaskWorkflow.run,
        TaskInput(instruction="bench", workspace=workspace, model="bench", stream=False, max_iterations=turns + 5),
        id=f"bench-agent-{uuid.uuid4().hex[:8]}", task_queue=queue,
    )
    assert outcome.turns == turns, outcome


async def main(turns: int, repeat: int) -> None:
    env = await start_local_env(search_attributes=False)
    agent_s, floor_s, noop_s = [], [], []
    config = load_settings()
    secrets = SecretStore.from_settings(config.secrets)
    try:
        with tempfile.TemporaryDirectory() as ws:
            store = ContextStore(Path(ws) / ".store" / "context.db")
            for i in range(turns):
                Path(ws, f"notes{i}.txt").write_text(f"note {i}\n" + "x" * 1024)
            for _ in range(repeat + 1):  # the first round warms up and is discarded
                for kind in ("agent", "floor", "noop"):
                    with ScriptedModelServer(script(turns)) as model:
                        queue = f"bench-{uuid.uuid4().hex[:8]}"
                        llm = LlmActivities(ProviderSettings(openai_base_url=model.url), store, secrets,
                                            tables=config.models)
                        tools = ToolActivities(store, secrets, config)
                        plugin = AgentPlugin(  # the runner, converter and interceptors of every worker of ours
                            "bench", workflows=[AgentTaskWorkflow, FloorWorkflow, NoopFloorWorkflow],
                            activities=[llm.call_llm, tools.run_tool, tools.redact_text, noop,
                                        PromptActivities(store, secrets, config).prompt_context])
                        async with Worker(env.client, task_queue=queue, plugins=[plugin]):
                            if kind == "agent":
                                agent_s.append(await timed(run_agent(env.client, queue, ws, turns)))
                            elif kind == "floor":
                                floor_s.append(await timed(env.client.execute_workflow(
                                    FloorWorkflow.run, (ws, turns), id=f"bench-floor-{uuid.uuid4().hex[:8]}", task_queue=queue)))
                            else:
                                noop_s.append(await timed(env.client.execute_workflow(
                                    NoopFloorWorkflow.run, turns, id=f"bench-noop-{uuid.uuid4().hex[:8]}", task_queue=queue)))
    finally:
        await env.shutdown()
    agent, floor, noop_floor = (statistics.median(x[1:]) for x in (agent_s, floor_s, noop_s))
    print(f"turns per task:                 {turns}  (median of {repeat} runs after 1 warm-up)")
    print(f"agent task wall time:           {agent:.3f} s  ({agent / turns * 1000:.1f} ms/turn)")
    print(f"floor (same activities, bare):  {floor:.3f} s  ({floor / turns * 1000:.1f} ms/turn)")
    print(f"noop floor (2 no-op acts/turn): {noop_floor:.3f} s  ({noop_floor / turns * 1000:.1f} ms/turn)")
    print(f"ratio agent / floor:            {agent / floor:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    quiet_logging()
    asyncio.run(main(opts.turns, opts.repeat))
