"""A model with a 4K-token window: with the default tools, the XML fallback's compact prompt
leaves room for the conversation and the reply, and a whole task fits."""

from __future__ import annotations

import json

import tools
from contracts.task import DEFAULT_TOOLS, TaskState, default_shown
from core.messages import ToolCallRequest
from fakes.scripted import text
from prompts import build_system_prompt
from providers.xml_tools import compact_tools_prompt, render_tool_call, tools_prompt
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
