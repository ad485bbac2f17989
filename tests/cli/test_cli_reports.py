"""What the CLI reports about a finished task is its last state, turn by turn and in total."""

from __future__ import annotations

import json

import pytest

from fakes.step import Step
from tests.cli.test_cli import cli
from tests.workflows.harness import scripted_worker

MODEL = "gpt-4o-mini"  # priced in the built-in table, so every turn costs something


def two_turns() -> list[Step]:
    return [
        Step(tool_calls=[("shell", {"command": "echo hi"})], usage=(1000, 70)),
        Step(tool_calls=[("message", {"type": "result", "text": "said hi"})], usage=(300, 30)),
    ]


async def test_watch_json_reports_each_turns_own_usage_and_the_totals_at_the_end(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, two_turns()):
        code, out, err = await cli(client, "start", "--model", MODEL, "--workspace", str(workspace), "--verify", "off",
                                   "say hi", queue=task_queue)
        workflow_id = out.strip().splitlines()[-1]
        await client.get_workflow_handle(workflow_id).result()
        code, out, err = await cli(client, "watch", workflow_id, "--json", queue=task_queue)
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    turns = [e for e in events if e["type"] == "turn.completed"]
    assert [(t["turn"], t["usage"]["input_tokens"], t["usage"]["output_tokens"]) for t in turns] == [
        (1, 1000, 70), (2, 300, 30),
    ]
    assert all(t["cost_usd"] > 0 for t in turns)
    total = events[-1]
    assert total["type"] == "task.completed" and total["turns"] == 2
    assert (total["usage"]["input_tokens"], total["usage"]["output_tokens"]) == (1300, 100)
    assert total["cost_usd"] == pytest.approx(sum(t["cost_usd"] for t in turns))


async def test_status_json_of_a_finished_task_reports_its_last_state(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, two_turns()):
        code, out, err = await cli(client, "start", "--model", MODEL, "--workspace", str(workspace), "--verify", "off",
                                   "say hi", queue=task_queue)
        workflow_id = out.strip().splitlines()[-1]
        outcome = await client.get_workflow_handle(workflow_id).result()
        code, out, err = await cli(client, "status", workflow_id, "--json", queue=task_queue)
        assert code == 0, err
        replayed = json.loads(out)  # a worker polls the queue: it replays the task for the rest
    code, out, err = await cli(client, "status", workflow_id, "--json", queue=task_queue)
    assert code == 0, err
    alone = json.loads(out)  # no worker: the outcome and the task's input
    for status in (replayed, alone):
        assert status["state"] == "DONE" and status["temporal_status"] == "COMPLETED"
        assert status["turn"] == 2 and status["final_text"] == "said hi" and status["error"] is None
        assert (status["usage"]["input_tokens"], status["usage"]["output_tokens"]) == (1300, 100)
        assert status["cost_usd"] == pytest.approx(outcome["cost_usd"]) and status["cost_usd"] > 0
        assert status["model"] == MODEL and status["provider"] == "openai" and status["run"] == 1
        assert status["pending_approval"] is None
    assert replayed["entries"] == 5  # instruction, and a call and its result per turn
