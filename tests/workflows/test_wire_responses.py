"""A real task on the OpenAI Responses wire (``--provider openai_responses``): a tool round
trip through the workflow, with the model's reasoning carried across turns by its encrypted
content, against the strict scripted server."""

from __future__ import annotations

import pytest

from contracts.task import TaskState
from fakes import scripted_responses
from fakes.scripted import tool
from fakes.step import Step
from tests.workflows.harness import make_input, run_task, scripted_worker


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
async def test_a_task_runs_a_tool_round_trip_on_the_responses_wire(client, task_queue, workspace, stream):
    steps = [
        Step(reasoning="Write the file first, then report.", text="Writing it.",
             tool_calls=[("shell", {"command": "echo durable > out.txt"})]),
        tool("message", type="result", text="wrote it"),
    ]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, provider="openai_responses", stream=stream))
        model.assert_consumed()  # strict: every request was one the Responses API accepts
    assert outcome.status == TaskState.DONE and outcome.final_text == "wrote it"
    assert (workspace / "out.txt").read_text() == "durable\n"
    first, second = model.requests
    assert (first["store"], first["include"], first["stream"]) == (False, ["reasoning.encrypted_content"], stream)
    assert {t["name"] for t in first["tools"]} >= {"shell", "message"} and first["tool_choice"] == "auto"
    items = second["input"]
    kinds = [i["type"] for i in items]
    assert kinds[kinds.index("reasoning"):] == ["reasoning", "message", "function_call", "function_call_output"]
    reasoning, said, call, output = items[kinds.index("reasoning"):]
    assert reasoning == {"type": "reasoning", "id": "rs_scripted_1",
                         "summary": [{"type": "summary_text", "text": "Write the file first, then report."}],
                         "encrypted_content": scripted_responses.encrypted(1)}
    assert said == {"type": "message", "role": "assistant", "content": "Writing it."}
    assert (call["call_id"], call["name"]) == ("call_1_0", "shell")
    assert output["call_id"] == "call_1_0" and output["type"] == "function_call_output"
