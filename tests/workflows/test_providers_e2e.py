"""The same task loop over every tool-calling mode and wire, failover, cost and streaming."""

from __future__ import annotations

import json
import time

import pytest

from cli.follow import Follower
from cli.sinks import Sink
from contracts.task import ModelRef, TaskState
from core.messages import ToolCallRequest
from fakes.scripted import ScriptedModelServer, error, text, tool
from fakes.step import Step
from providers.xml_tools import render_tool_call
from tests.workflows.harness import make_input, outcome_of, run_task, scripted_worker, start
from workflows.task import AgentTaskWorkflow


def xml(name: str, **arguments) -> Step:
    """A reply carrying the call as XML text, as a model behind a tools-dropping proxy writes it."""
    return text("I'll do that.\n" + render_tool_call(ToolCallRequest(id="x", name=name, arguments=arguments)))


MODES = {
    "openai": ({}, "openai", tool),
    "anthropic": ({}, "anthropic", tool),
    "xml over openai": ({"xml_wire": "openai"}, "anthropic_xml", xml),
    "xml over anthropic": ({"xml_wire": "anthropic"}, "anthropic_xml", xml),
}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
@pytest.mark.parametrize("mode", list(MODES))
async def test_the_task_loop_runs_unchanged_in_every_mode(client, task_queue, workspace, mode, stream):
    overrides, provider, call = MODES[mode]
    steps = [call("shell", command="echo durable > out.txt"), call("message", type="result", text="wrote it")]
    async with scripted_worker(client, task_queue, steps, **overrides) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, provider=provider, stream=stream))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE and outcome.final_text == "wrote it"
    assert (workspace / "out.txt").read_text() == "durable\n"
    second = model.requests[1]
    if provider == "anthropic_xml":
        assert "tools" not in second
        system = second["system"] if isinstance(second.get("system"), str) else json.dumps(second.get("system") or second["messages"][0])
        assert "<functions>" in system or "function_calls" in system
    elif provider == "anthropic":
        assert second["messages"][1]["content"][-1]["type"] == "tool_use"
        assert second["messages"][2]["content"][0]["type"] == "tool_result"


async def test_failover_moves_to_the_next_model_after_repeated_failures(client, task_queue, workspace):
    down = [error(503, "primary down")] * 2
    with ScriptedModelServer(down) as primary:
        backup_steps = [tool("message", type="result", text="answered by the backup")]
        async with scripted_worker(client, task_queue, backup_steps, openai_base_url=primary.url) as backup:
            handle = await start(client, task_queue, make_input(
                workspace, provider="openai", model="primary-model", failover_after=2,
                fallbacks=[ModelRef(provider="anthropic", model="backup-model")],
            ))
            outcome = await outcome_of(handle)
            page = await handle.query(AgentTaskWorkflow.events, 0)
    assert outcome.status == TaskState.DONE and outcome.final_text == "answered by the backup"
    assert primary.hits() == 2 and backup.requests[0]["model"] == "backup-model"
    notices = [e.text for e in page.entries if e.kind == "status_notice"]
    assert any("failing over from openai:primary-model to anthropic:backup-model" in n for n in notices)


async def test_an_auth_error_fails_at_once_naming_the_provider_without_failover(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, [error(401, "bad key")]) as model:
        outcome = await run_task(client, task_queue, make_input(
            workspace, fallbacks=[ModelRef(provider="anthropic", model="never-used")]))
    assert outcome.status == TaskState.FAILED and model.hits() == 1
    assert "openai" in outcome.error and "401" in outcome.error and "bad key" in outcome.error


async def test_anthropic_overloaded_529_is_retried(client, task_queue, workspace):
    steps = [error(529, "overloaded"), tool("message", type="result", text="ok")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, provider="anthropic"))
    assert outcome.status == TaskState.DONE and model.hits() == 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_stream_cut_in_the_middle_is_retried(client, task_queue, workspace, provider):
    cut = Step(text="a long answer that will be cut", tool_calls=[("message", {"type": "result", "text": "x"})], cut_stream=True)
    steps = [cut, tool("message", type="result", text="complete")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, provider=provider, stream=True))
    assert outcome.status == TaskState.DONE and outcome.final_text == "complete" and model.hits() == 2


async def test_cost_is_computed_from_the_price_table_and_a_limit_stops_the_task(client, task_queue, workspace):
    steps = [Step(tool_calls=[("shell", {"command": "true"})], usage=(100_000, 10_000)),
             Step(tool_calls=[("message", {"type": "result", "text": "done"})], usage=(100_000, 10_000))]
    async with scripted_worker(client, task_queue, steps):
        priced = await run_task(client, task_queue, make_input(workspace, model="gpt-4o-mini"))
    assert priced.status == TaskState.DONE and priced.cost_usd > 0
    per_call = priced.cost_usd / 2
    async with scripted_worker(client, task_queue, steps[:1]):
        limited = await run_task(client, task_queue, make_input(workspace, model="gpt-4o-mini", cost_limit_usd=per_call / 2))
    assert limited.status == TaskState.FAILED and "cost limit" in limited.error


async def test_streamed_text_reaches_watchers_but_not_the_history_twice(client, task_queue, workspace):
    said = "Let me think about this carefully, one piece at a time."
    steps = [Step(text=said, text_pieces=8, frame_delay_s=0.15, tool_calls=[("message", {"type": "result", "text": "ok"})])]
    sink = RecordingSink()
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace, stream=True))
        follower = Follower(client, handle.id, sink, interactive=False, ask=None)
        await follower.run(lambda: outcome_of(handle))
        history = b"".join(e.SerializeToString() for e in (await handle.fetch_history()).events)
    assert "".join(text for _, text in sink.deltas) == said
    streamed_until = model.text_sent[-1][0]
    assert sink.deltas[0][0] < streamed_until  # shown while the model was still streaming
    assert history.count(said.encode()) == 1  # the final turn result only: live text costs no event


class RecordingSink(Sink):
    def __init__(self) -> None:
        self.deltas: list[tuple[float, str]] = []
        self.entries: list = []

    def delta(self, turn: int, text: str) -> None:
        self.deltas.append((time.monotonic(), text))

    def entry(self, entry, status) -> None:
        self.entries.append(entry)

    def note(self, text: str) -> None: ...
    def retry(self, activity: str, attempt: int, reason: str, next_in_s) -> None: ...
    def waiting(self, status) -> None: ...
    def outcome(self, outcome, duration_s) -> None: ...
