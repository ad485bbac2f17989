"""Real tasks on the OpenAI-compatible wire against the scripted server in strict mode (it
refuses what llama.cpp, vLLM and OpenAI refuse: fakes/scripted_strict.py): tool round trips
in the openai and anthropic_xml-over-openai modes, --no-stream, an empty answer, arguments
that were not JSON, a server that reports no usage, errors inside a stream."""

from __future__ import annotations

import json

import pytest

from cli.tasks import task_input
from contracts.task import TaskState
from core.messages import ToolCallRequest
from fakes.scripted import text, tool
from fakes.step import Step
from providers.arguments import INVALID_ARGUMENTS
from providers.xml_tools import render_tool_call
from tests.configured import cli_args
from tests.workflows.harness import make_input, run_task, scripted_worker, tool_messages


def xml(name: str, **arguments) -> Step:
    return text("On it.\n" + render_tool_call(ToolCallRequest(id="x", name=name, arguments=arguments)))


MODES = {"openai": ({}, tool), "anthropic_xml": ({"xml_wire": "openai"}, xml)}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
@pytest.mark.parametrize("provider", list(MODES))
async def test_a_tool_round_trip_passes_the_strict_server(client, task_queue, workspace, provider, stream):
    overrides, call = MODES[provider]
    steps = [call("shell", command="echo wired > out.txt"), call("message", type="result", text="wrote it")]
    async with scripted_worker(client, task_queue, steps, **overrides) as model:
        assert model.strict
        outcome = await run_task(client, task_queue, make_input(workspace, provider=provider, stream=stream))
    model.assert_consumed()  # nothing refused, every step used
    assert outcome.status == TaskState.DONE and outcome.final_text == "wrote it"
    assert (workspace / "out.txt").read_text() == "wired\n"
    second = model.requests[1]
    assert second["stream"] is stream
    if provider == "openai":
        assert second["tool_choice"] == "auto" and second["tools"]
        asked = next(m for m in second["messages"] if m.get("tool_calls"))
        assert asked["content"] == ""  # the call had no text: "", never null
        assert json.loads(asked["tool_calls"][0]["function"]["arguments"]) == {"command": "echo wired > out.txt"}
        assert tool_messages(second)[0]["tool_call_id"] == asked["tool_calls"][0]["id"]
    else:
        assert "tools" not in second and "tool_choice" not in second
        assert "<function_results>" in second["messages"][-1]["content"]


@pytest.mark.parametrize(("flag", "env", "streams"), [
    ([], None, True), (["--no-stream"], None, False), ([], "0", False), ([], "false", False), ([], "1", True),
])
async def test_no_stream_and_agent_stream_0_send_stream_false(client, task_queue, workspace, monkeypatch,
                                                              flag, env, streams):
    if env is None:
        monkeypatch.delenv("AGENT_STREAM", raising=False)
    else:
        monkeypatch.setenv("AGENT_STREAM", env)
    args = cli_args(["run", "--workspace", str(workspace), *flag, "say done"])
    inp = task_input(args, "scripted-model")
    async with scripted_worker(client, task_queue, [tool("message", type="result", text="done")]) as model:
        outcome = await run_task(client, task_queue, inp)
    assert outcome.status == TaskState.DONE
    assert model.requests[0]["stream"] is streams
    assert ("stream_options" in model.requests[0]) is streams


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
@pytest.mark.parametrize("glitch", ["", '{"id": "chatcmpl-1", "choices": [{"index": 0, "mess'], ids=["empty", "cut"])
async def test_an_empty_or_cut_200_answer_then_success_finishes_the_task(client, task_queue, workspace, stream, glitch):
    steps = [Step(raw=glitch, headers={"content-type": "application/json"}),
             tool("message", type="result", text="second time lucky")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, stream=stream))
    model.assert_consumed()
    assert outcome.status == TaskState.DONE and outcome.final_text == "second time lucky"
    assert model.hits() == 2


async def test_arguments_that_were_not_json_are_answered_and_sent_back_as_a_placeholder(client, task_queue, workspace):
    steps = [Step(tool_calls=[("shell", '{"command": "echo "hi""}')]), tool("message", type="result", text="fixed")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace))
    model.assert_consumed()  # the strict server parsed the history's arguments, as vLLM does
    assert outcome.status == TaskState.DONE and outcome.final_text == "fixed"
    second = model.requests[1]
    asked = next(m for m in second["messages"] if m.get("tool_calls"))
    sent = json.loads(asked["tool_calls"][0]["function"]["arguments"])
    assert sent == {INVALID_ARGUMENTS: '{"command": "echo "hi""}'}
    answer = tool_messages(second)[0]["content"]
    assert "not valid JSON" in answer and "Send the arguments again" in answer


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
async def test_a_server_that_reports_no_usage_gives_estimated_usage(client, task_queue, workspace, stream):
    steps = [Step(tool_calls=[("message", {"type": "result", "text": "done"})], report_usage=False)]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, stream=stream))
    sent = json.dumps(model.requests[0], ensure_ascii=False, separators=(",", ":"))
    assert outcome.status == TaskState.DONE
    assert outcome.usage.estimated
    assert outcome.usage.input_tokens == -(-len(sent) // 4)
    assert outcome.usage.output_tokens > 0


LLAMA_400 = 'error: {"code":400,"message":"Invalid tool_choice: any","type":"invalid_request_error"}\n\ndata: [DONE]\n\n'
LLAMA_503 = 'error: {"code":503,"message":"Loading model","type":"unavailable_error"}\n\ndata: [DONE]\n\n'


async def test_a_client_error_inside_a_stream_fails_at_once_in_one_line(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, [Step(raw=LLAMA_400)]) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, stream=True))
    assert outcome.status == TaskState.FAILED and model.hits() == 1
    assert "Invalid tool_choice: any" in (outcome.error or "") and "\n" not in (outcome.error or "")


async def test_a_server_error_inside_a_stream_is_retried(client, task_queue, workspace):
    steps = [Step(raw=LLAMA_503), tool("message", type="result", text="loaded now")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, stream=True))
    assert outcome.status == TaskState.DONE and outcome.final_text == "loaded now" and model.hits() == 2
