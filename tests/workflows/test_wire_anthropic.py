"""A real task on the Anthropic wire against the strict scripted server: cache breakpoints
that move with the conversation, and extended thinking (``--thinking-budget``) carried back
across the tool-use loop through the workflow's history."""

from __future__ import annotations

from typing import Any

import pytest

from cli.tasks import task_input
from contracts.task import TaskState
from fakes.scripted import tool
from fakes.step import Step
from tests.configured import cli_args
from tests.workflows.harness import make_input, run_task, scripted_worker


def marked(body: dict[str, Any]) -> list[str]:
    places = [f"tools.{i}" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    places += [f"system.{i}" for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    places += [f"messages.{i}" for i, m in enumerate(body["messages"]) for b in m["content"] if "cache_control" in b]
    return places


async def test_cache_breakpoints_move_with_a_task_and_stay_within_four(client, task_queue, workspace):
    steps = [tool("shell", command="true"), tool("shell", command="echo hi"), tool("message", type="result", text="ok")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, provider="anthropic"))
        model.assert_consumed()
    assert outcome.status == TaskState.DONE
    tools = len(model.requests[0]["tools"])
    # The last tool, the stable system block, then the latest user message and the one before.
    assert [marked(r) for r in model.requests] == [
        [f"tools.{tools - 1}", "system.0", "messages.0"],
        [f"tools.{tools - 1}", "system.0", "messages.0", "messages.2"],
        [f"tools.{tools - 1}", "system.0", "messages.2", "messages.4"],
    ]


def test_thinking_budget_option_reaches_the_task_input_and_refuses_less_than_the_api_minimum(workspace, capsys):
    args = cli_args(["run", "--workspace", str(workspace), "--thinking-budget", "4096", "think"])
    assert task_input(args, "claude-sonnet-4-5").thinking_budget == 4096
    assert task_input(cli_args(["run", "--workspace", str(workspace), "x"]), "m").thinking_budget is None
    with pytest.raises(SystemExit):
        cli_args(["run", "--thinking-budget", "512", "think"])
    assert "must be at least 1024 tokens" in capsys.readouterr().err


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
async def test_thinking_budget_thinks_and_carries_the_signed_thinking_back(client, task_queue, workspace, stream,
                                                                           monkeypatch):
    monkeypatch.delenv("AGENT_STREAM", raising=False)
    steps = [
        Step(reasoning="Write the file, then report.", tool_calls=[("shell", {"command": "echo durable > out.txt"})]),
        tool("message", type="result", text="wrote it"),  # later calls of the turn think no more
    ]
    flags = ["--provider", "anthropic", "--thinking-budget", "2048", "--verify", "off", *([] if stream else ["--no-stream"])]
    inp = task_input(cli_args(["run", "--workspace", str(workspace), *flags, "write out.txt"]), "claude-x")
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, inp)
        model.assert_consumed()  # strict: the turn's thinking block went back with its tool_use
    assert outcome.status == TaskState.DONE and (workspace / "out.txt").read_text() == "durable\n"
    assert [r.get("thinking") for r in model.requests] == [{"type": "enabled", "budget_tokens": 2048}] * 2
    assert all("temperature" not in r and r["max_tokens"] > 2048 for r in model.requests)
    said = model.requests[1]["messages"][1]["content"]
    assert said[0] == {"type": "thinking", "thinking": "Write the file, then report.",
                       "signature": "scripted-signature-1"}
    assert said[1]["type"] == "tool_use"
