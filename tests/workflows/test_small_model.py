"""A model with a 4K-token window: with the default tools, the XML fallback's compact prompt
leaves room for the conversation and the reply, and a whole task fits."""

from __future__ import annotations

import json

import tools
from contracts.task import TaskState
from contracts.toolset import DEFAULT_TOOLS, default_shown
from core.messages import ToolCallRequest
from fakes.scripted import text
from prompts import build_system_prompt
from providers.xml_tools import compact_tools_prompt, render_tool_call, tools_prompt
from tests import configured
from tests.workflows.harness import make_input, run_task, scripted_worker

WINDOW = 4096


def xml(name: str, **arguments):
    return text(render_tool_call(ToolCallRequest(id="x", name=name, arguments=arguments)))


def tokens(text: str) -> int:
    return -(-len(text) // 4)  # the engine's estimate: 4 characters a token, rounded up


def test_the_compact_prompt_is_a_fraction_of_the_full_one():
    specs = tools.specs(default_shown(page_open=False))  # what a task sees until it opens a page
    names = [s.name for s in specs]
    full = tools_prompt(specs) + build_system_prompt(workspace="/home/me/project", date="2026-11-23",
                                                     tool_names=names).text()
    compact = compact_tools_prompt(specs) + build_system_prompt(
        workspace="/home/me/project", date="2026-11-23", tool_names=names, compact=True).text()
    assert tokens(compact) <= 700 < 3500 <= tokens(full)
    for spec in specs:  # every tool and every parameter is still named
        assert f"- {spec.name}(" in compact
        for parameter in spec.parameters.get("properties", {}):
            assert parameter in compact


async def test_a_task_fits_a_4k_model_with_the_default_tools(client, task_queue, workspace):
    steps = [xml("shell", command="echo small > s.txt"), xml("message", type="result", text="fits")]
    async with scripted_worker(client, task_queue, steps, xml_wire="openai") as model:
        outcome = await run_task(client, task_queue, make_input(
            workspace, provider="anthropic_xml", context_window=WINDOW, tools=list(DEFAULT_TOOLS)))
    assert outcome.status == TaskState.DONE and outcome.final_text == "fits"
    for request in model.requests:
        prompt = tokens(json.dumps(request["messages"], ensure_ascii=False))
        assert prompt + request["max_tokens"] <= WINDOW, (prompt, request["max_tokens"])
        assert "Tools:\n- message(" in request["messages"][0]["content"]


async def test_a_local_server_a_table_does_not_know_gets_its_window_and_a_task_on_the_defaults(
        client, task_queue, workspace):
    """The path a user takes with llama.cpp: a model no table knows, streaming on (the default),
    native tools. The server names its 4K window at /props, so every request fits it with the
    compact prompt; it answers a streamed call with tools with an empty stream (as
    llama-cpp-python does), so the call is asked again unstreamed, once, visibly."""
    from cli.tasks import model_window
    from core.entries import StatusNotice
    from fakes.scripted import tool
    from tests.workflows.harness import start
    from workflows.task import AgentTaskWorkflow

    model = "my-local-model"
    steps = [tool("shell", command="echo hello"), tool("message", type="result", text="said hello")]
    server = {"streams_tools": False, "window": WINDOW}
    async with scripted_worker(client, task_queue, steps, server=server) as served:
        handle = await start(client, task_queue, make_input(
            workspace, model=model, provider="openai", stream=True, context_window=model_window(model, configured.settings().models),
            tools=list(DEFAULT_TOOLS)))
        outcome = await handle.result()
        page = await handle.query(AgentTaskWorkflow.events, 0)
    assert model_window(model, configured.settings().models) > WINDOW  # the tables' guess for an unknown model is larger
    assert outcome.status == TaskState.DONE and outcome.final_text == "said hello"
    assert served.empty_streams == 1
    assert [r["stream"] for r in served.requests] == [True, False, False]
    for request in served.requests:
        prompt = tokens(json.dumps([request["messages"], request["tools"]], ensure_ascii=False))
        assert prompt + request["max_tokens"] <= WINDOW, (prompt, request["max_tokens"])
    notices = [e.text for e in page.entries if isinstance(e, StatusNotice) and e.reason == "provider"]
    assert len(notices) == 1 and "empty stream" in notices[0]
