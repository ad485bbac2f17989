"""Arguments that were not valid JSON go back to every wire as a valid placeholder object."""

from __future__ import annotations

import json

import pytest

from core.messages import ChatMessage, LlmRequest, ToolCallRequest
from providers.arguments import INVALID_ARGUMENTS, RAW_LIMIT, history_arguments
from providers.openai import OpenAIProvider
from providers.xml_parse import parse_tool_calls
from providers.xml_tools import XmlToolsProvider, render_tool_call
from tests import configured
from tools.registry import execute


def bad(raw: str | None) -> ToolCallRequest:
    return ToolCallRequest(id="c1", name="shell", arguments_raw=raw, parse_error="arguments are not valid JSON")


def test_valid_arguments_go_back_unchanged():
    call = ToolCallRequest(id="c1", name="shell", arguments={"command": "ls", "n": [1, 2]})
    assert history_arguments(call) == {"command": "ls", "n": [1, 2]}


@pytest.mark.parametrize("raw", ['{"a": ', "", None, "é" * (RAW_LIMIT * 2)])
def test_invalid_arguments_become_the_placeholder_with_the_raw_text_cut(raw: str | None):
    assert history_arguments(bad(raw)) == {INVALID_ARGUMENTS: (raw or "")[:RAW_LIMIT]}


def test_an_over_long_call_cut_by_the_activity_goes_back_as_valid_json():
    """bounded() (activities/llm.py) keeps 2,000 characters of an over-long call's text: cut JSON."""
    cut = ('{"path": "big.txt", "content": "' + "x" * 5000)[:2000]
    sent = OpenAIProvider("http://x/v1").to_wire(LlmRequest(model="m", system="", messages=[
        ChatMessage(role="assistant", tool_calls=[bad(cut)]),
        ChatMessage(role="tool", tool_call_id="c1", content="too long"),
    ]))["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(sent) == {INVALID_ARGUMENTS: cut}


def test_the_xml_wire_renders_a_native_call_that_did_not_parse_as_the_placeholder():
    rendered = render_tool_call(bad('{"command": "ls'))
    _, (back,) = parse_tool_calls(rendered, [])
    assert (back.name, back.arguments) == ("shell", {INVALID_ARGUMENTS: '{"command": "ls'})


def test_the_xml_wire_still_shows_the_model_its_own_broken_xml():
    raw = '<invoke name="shell">\n<parameter name="command">ls'
    call = ToolCallRequest(id="xml_call_0", name="shell", arguments_raw=raw, parse_error="not closed")
    assert raw in render_tool_call(call)
    text = XmlToolsProvider(OpenAIProvider("http://x/v1")).to_request(LlmRequest(
        model="m", system="", messages=[ChatMessage(role="assistant", tool_calls=[call])])).messages[0].content
    assert raw in text


async def test_the_model_is_told_its_arguments_were_invalid(tmp_path):
    outcome = await execute("shell", {}, configured.tool_context(workspace=tmp_path), parse_error="Expecting value: line 1")
    assert outcome.status == "retry"
    assert "were not valid JSON (Expecting value: line 1)" in outcome.content
    assert "Send the arguments again as one JSON object." in outcome.content
