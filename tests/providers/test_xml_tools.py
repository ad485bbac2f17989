"""The XML tool-calling fallback: the parser on adversarial replies, rendering, and the mode end to end."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.messages import ChatMessage, LlmRequest, SystemPrompt, ThinkingPart, ToolCallRequest, ToolSpec
from fakes.scripted import ScriptedModelServer, error, text
from fakes.step import Step
from providers.anthropic import AnthropicProvider
from providers.errors import ProviderError
from providers.openai import OpenAIProvider
from providers.xml_parse import parse_tool_calls
from providers.xml_tools import XmlToolsProvider, render_tool_call, render_tool_result, tools_prompt

FILE = ToolSpec(
    name="file",
    description="Read or write a file",
    parameters={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["read", "write"]},
            "path": {"type": "string"},
            "content": {"type": "string"},
            "line": {"type": "integer"},
            "append": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "meta": {"type": "object"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "limit": {"type": ["integer", "null"]},
        },
        "required": ["action", "path"],
    },
)
SHELL = ToolSpec(
    name="shell",
    description="Run a bash command",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
TOOLS = [FILE, SHELL]


def invoke(name: str, **params: str) -> str:
    body = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in params.items())
    return f'<invoke name="{name}">\n{body}</invoke>'


def calls(reply: str) -> list[tuple[str, str, dict[str, Any], str | None]]:
    return [(c.id, c.name, c.arguments, c.parse_error) for c in parse_tool_calls(reply, TOOLS)[1]]


# -- parsing ------------------------------------------------------------------


def test_parse_returns_the_prose_around_a_call_and_the_call():
    reply = f"I'll look first.\n\n<function_calls>\n{invoke('shell', command='ls -la')}\n</function_calls>\n\nThen decide."
    prose, found = parse_tool_calls(reply, TOOLS)
    assert prose == "I'll look first.\n\nThen decide."
    assert [(c.id, c.name, c.arguments, c.parse_error) for c in found] == [
        ("xml_call_0", "shell", {"command": "ls -la"}, None)
    ]


def test_parse_reads_two_invokes_in_one_block_and_a_call_in_a_second_block():
    reply = (
        f"<function_calls>\n{invoke('shell', command='pwd')}\n{invoke('file', action='read', path='a')}\n"
        f"</function_calls>\nand also\n<function_calls>{invoke('shell', command='id')}</function_calls>"
    )
    prose, _ = parse_tool_calls(reply, TOOLS)
    assert prose == "and also"
    assert calls(reply) == [
        ("xml_call_0", "shell", {"command": "pwd"}, None),
        ("xml_call_1", "file", {"action": "read", "path": "a"}, None),
        ("xml_call_2", "shell", {"command": "id"}, None),
    ]


def test_parse_keeps_nested_tags_and_closing_tag_lookalikes_in_a_value():
    html = '<div class="x"><p>hi</p></div>\n<invoke>not a call</invoke>'
    code = 'END = "</parameter>"  # the parser\'s own tag'
    reply = f"<function_calls>\n{invoke('file', action='write', path='a.html', content=html, note=code)}\n</function_calls>"
    assert calls(reply) == [
        ("xml_call_0", "file", {"action": "write", "path": "a.html", "content": html, "note": code}, None)
    ]


def test_parse_takes_the_last_closing_parameter_tag_of_the_last_value():
    content = "a</parameter>b</parameter>c"
    reply = f'<function_calls><invoke name="file"><parameter name="content">{content}</parameter></invoke></function_calls>'
    assert calls(reply)[0][2] == {"content": content}


def test_parse_takes_cdata_content_verbatim_even_with_structural_tags_inside():
    inner = '</parameter>\n<parameter name="path">evil</parameter>\n</invoke>\n</function_calls>\n  '
    reply = (
        '<function_calls>\n<invoke name="file">\n<parameter name="path">a.xml</parameter>\n'
        f'<parameter name="content">\n<![CDATA[{inner}]]>\n</parameter>\n</invoke>\n</function_calls>'
    )
    assert calls(reply) == [("xml_call_0", "file", {"path": "a.xml", "content": inner}, None)]


def test_parse_joins_adjacent_cdata_sections_and_inlines_cdata_in_text():
    split = '<![CDATA[a]]]]><![CDATA[>b]]>'
    mixed = 'x <![CDATA[<y>]]> z'
    reply = f"<function_calls>{invoke('file', content=split, note=mixed)}</function_calls>"
    assert calls(reply)[0][2] == {"content": "a]]>b", "note": "x <y> z"}


def test_parse_decodes_json_for_non_string_parameters_only():
    reply = "<function_calls>" + invoke(
        "file", line="42", append="true", tags='["a", "b"]', meta='{"k": 1}', path="007",
        note="null", limit="null",
    ) + "</function_calls>"
    assert calls(reply)[0][2] == {
        "line": 42, "append": True, "tags": ["a", "b"], "meta": {"k": 1}, "path": "007", "note": "null", "limit": None,
    }


def test_parse_leaves_near_misses_and_unknown_parameters_as_strings():
    reply = "<function_calls>" + invoke("file", line="forty", append="True", extra="5") + invoke(
        "unknown_tool", n="5"
    ) + "</function_calls>"
    assert [c[2] for c in calls(reply)] == [{"line": "forty", "append": "True", "extra": "5"}, {"n": "5"}]


def test_parse_drops_the_newlines_of_a_value_written_on_its_own_lines():
    reply = '<function_calls><invoke name="file"><parameter name="content">\nline 1\nline 2\n</parameter></invoke>'
    assert calls(reply)[0][2] == {"content": "line 1\nline 2"}


def test_parse_accepts_an_unclosed_function_calls_block_with_complete_invokes():
    reply = f"Running.\n<function_calls>\n{invoke('shell', command='make')}\n"
    prose, found = parse_tool_calls(reply, TOOLS)
    assert prose == "Running."
    assert [(c.name, c.arguments, c.parse_error) for c in found] == [("shell", {"command": "make"}, None)]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ('<function_calls>\n<invoke name="file">\n<parameter name="path">a.txt</parameter>\n', "not closed with </invoke>"),
        ('<function_calls><invoke name="file"><parameter name="content">half a fi', "not closed with </invoke>"),
        ('<function_calls><invoke name="file"><parameter name="path">a</invoke></function_calls>',
         '<parameter name="path"> is not closed'),
        ('<function_calls><invoke name="file"><parameter name="content"><![CDATA[abc</parameter></invoke>',
         "CDATA[ is not closed"),
    ],
)
def test_parse_reports_truncated_xml_as_a_parse_error(reply: str, problem: str):
    found = parse_tool_calls(reply, TOOLS)[1]
    assert len(found) == 1
    assert (found[0].id, found[0].name, found[0].arguments) == ("xml_call_0", "file", {})
    assert found[0].parse_error and problem in found[0].parse_error
    assert found[0].arguments_raw and found[0].arguments_raw.startswith('<invoke name="file">')


def test_parse_reports_tag_soup_inside_an_invoke_with_the_expected_format():
    reply = '<function_calls><invoke name="shell"><command>ls</command></invoke></function_calls>'
    (call,) = parse_tool_calls(reply, TOOLS)[1]
    assert call.name == "shell" and call.arguments == {}
    assert call.parse_error == 'expected <parameter name="...">VALUE</parameter> inside <invoke>, found: <command>ls</command>'


def test_parse_reports_a_closed_block_without_invoke_and_an_invoke_without_name():
    soup = "<function_calls><tool>shell</tool></function_calls>"
    nameless = '<function_calls><invoke name=""><parameter name="a">b</parameter></invoke></function_calls>'
    (block,) = parse_tool_calls(soup, TOOLS)[1]
    (unnamed,) = parse_tool_calls(nameless, TOOLS)[1]
    assert block.parse_error and "holds no <invoke" in block.parse_error and block.name == ""
    assert unnamed.parse_error and "needs a tool name" in unnamed.parse_error


@pytest.mark.parametrize(
    "reply",
    [
        "All done, nothing to call.",
        "<thinking>hmm</thinking> <result><value>3</value></result> <parameter>x</parameter>",
        "I could use <function_calls> here, but I won't.",
        "<function_calls></function_calls>",
        "",
    ],
)
def test_parse_returns_the_text_unchanged_and_no_calls_without_a_call(reply: str):
    assert parse_tool_calls(reply, TOOLS) == (reply, [])


def test_parse_accepts_a_bare_invoke_without_function_calls_wrapper():
    reply = f"Sure. {invoke('shell', command='ls')} Next {invoke('shell', command='pwd')} end"
    prose, found = parse_tool_calls(reply, TOOLS)
    assert prose == "Sure.\n\nNext\n\nend"
    assert [c.arguments for c in found] == [{"command": "ls"}, {"command": "pwd"}]


def test_parse_accepts_single_quoted_names():
    reply = "<function_calls><invoke name='shell'><parameter name='command'>ls</parameter></invoke></function_calls>"
    assert calls(reply) == [("xml_call_0", "shell", {"command": "ls"}, None)]


# -- rendering ----------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        {"command": "ls -la"},
        {"action": "write", "path": "a", "content": "<div>\n</parameter>\n<parameter name=\"x\">y</parameter>\n"},
        {"content": "odd ]]> end", "note": "\nleading newline"},
        {"line": 3, "append": False, "tags": ["x"], "meta": {"a": [1, None]}},
        {},
    ],
)
def test_rendered_call_parses_back_to_the_same_call(arguments: dict[str, Any]):
    call = ToolCallRequest(id="c1", name="file", arguments=arguments)
    rendered = render_tool_call(call)
    assert rendered.startswith("<function_calls>\n<invoke name=\"file\">") and rendered.endswith("</function_calls>")
    prose, (back,) = parse_tool_calls(rendered, TOOLS)
    assert (prose, back.name, back.arguments, back.parse_error) == ("", "file", arguments, None)


def test_rendered_malformed_call_repeats_what_the_model_wrote():
    raw = '<invoke name="file"><parameter name="path">a'
    call = ToolCallRequest(id="xml_call_0", name="file", arguments_raw=raw, parse_error="not closed")
    assert render_tool_call(call) == f"<function_calls>\n{raw}\n</function_calls>"


def test_render_tool_result_wraps_the_content_in_function_results():
    assert render_tool_result("shell", "a.txt\nb.txt") == (
        "<function_results>\n<result>\n<tool_name>shell</tool_name>\n<stdout>\na.txt\nb.txt\n</stdout>\n"
        "</result>\n</function_results>"
    )


def test_tools_prompt_lists_each_tool_with_its_schema_and_the_rules():
    prompt = tools_prompt(TOOLS)
    listed = prompt[prompt.index("<functions>") + len("<functions>"):prompt.index("</functions>")]
    entries = [json.loads(line[len("<function>"):-len("</function>")]) for line in listed.strip().splitlines()]
    assert entries == [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in TOOLS]
    assert "exactly one call per reply" in prompt
    assert "CDATA" in prompt and "JSON" in prompt
    example = prompt[prompt.rindex("<function_calls>"):prompt.rindex("</function_calls>") + len("</function_calls>")]
    weather = ToolSpec(name="get_weather", description="", parameters={"properties": {"days": {"type": "integer"}}})
    assert parse_tool_calls(example, [weather])[1][0].arguments == {"city": "Paris", "days": 3}


# -- the mode -----------------------------------------------------------------


HISTORY = [
    ChatMessage(role="user", content="List the files."),
    ChatMessage(
        role="assistant",
        content="Looking.",
        tool_calls=[ToolCallRequest(id="xml_call_0", name="shell", arguments={"command": "ls"})],
    ),
    ChatMessage(role="tool", tool_call_id="xml_call_0", name="shell", content="a.txt"),
    ChatMessage(role="user", content="<system-reminder>be brief</system-reminder>"),
]
SYSTEM = SystemPrompt(stable="Stable rules.\n", dynamic="\nDate: today")


def xml_request(**overrides: Any) -> LlmRequest:
    fields: dict[str, Any] = {"model": "m", "system": SYSTEM, "messages": HISTORY, "tools": TOOLS}
    return LlmRequest(**{**fields, **overrides})


def test_to_request_puts_the_tools_block_in_the_cached_stable_part():
    wire = XmlToolsProvider(OpenAIProvider("http://unused/v1")).to_request(xml_request())
    assert wire.system.stable == "Stable rules.\n\n" + tools_prompt(TOOLS) + "\n"
    assert wire.system.dynamic == "\nDate: today"
    assert wire.tools == []


def test_to_request_appends_the_tools_block_to_an_all_stable_prompt():
    wire = XmlToolsProvider(OpenAIProvider("http://unused/v1")).to_request(xml_request(system="Be terse.\n"))
    assert wire.system == SystemPrompt(stable="Be terse.\n\n" + tools_prompt(TOOLS))
    empty = XmlToolsProvider(OpenAIProvider("http://unused/v1")).to_request(xml_request(system=""))
    assert empty.system == SystemPrompt(stable=tools_prompt(TOOLS))


def test_to_request_leaves_the_prompt_alone_without_tools():
    wire = XmlToolsProvider(OpenAIProvider("http://unused/v1")).to_request(xml_request(tools=[]))
    assert wire.system == SYSTEM


def test_to_request_keeps_the_assistant_thinking():
    thought = [ThinkingPart(text="plan", signature="sig", provider="anthropic")]
    said = HISTORY[1].model_copy(update={"thinking": thought})
    wire = XmlToolsProvider(OpenAIProvider("http://unused/v1")).to_request(xml_request(messages=[HISTORY[0], said]))
    assert wire.messages[1].thinking == thought


def test_to_request_renders_calls_and_results_as_text_and_merges_user_messages():
    wire = XmlToolsProvider(OpenAIProvider("http://unused/v1")).to_request(xml_request())
    call = '<function_calls>\n<invoke name="shell">\n<parameter name="command">ls</parameter>\n</invoke>\n</function_calls>'
    assert [(m.role, m.content, m.tool_calls, m.tool_call_id) for m in wire.messages] == [
        ("user", "List the files.", [], None),
        ("assistant", f"Looking.\n\n{call}", [], None),
        ("user", render_tool_result("shell", "a.txt") + "\n\n<system-reminder>be brief</system-reminder>", [], None),
    ]


REPLY = 'Reading it.\n<function_calls>\n<invoke name="file">\n<parameter name="action">read</parameter>\n' \
        '<parameter name="path">a.txt</parameter>\n<parameter name="line">2</parameter>\n</invoke>\n</function_calls>'


def assert_parsed(result: Any) -> None:
    assert (result.source, result.content, result.finish_reason) == ("xml", "Reading it.", "tool_calls")
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("xml_call_0", "file", {"action": "read", "path": "a.txt", "line": 2})
    ]


@pytest.mark.parametrize("stream", [False, True])
async def test_xml_mode_over_the_anthropic_wire_end_to_end(stream: bool):
    with ScriptedModelServer([text(REPLY)]) as server:
        provider = XmlToolsProvider(AnthropicProvider(server.anthropic_url, "k"))
        result = await provider.complete(xml_request(stream=stream))
        await provider.aclose()
        server.assert_consumed()
    assert provider.name == "anthropic_xml"
    assert_parsed(result)
    body = server.requests[0]
    assert "tools" not in body
    stable, dynamic = body["system"]
    assert "<functions>" in stable["text"] and stable["cache_control"] == {"type": "ephemeral"}
    assert stable["text"] == "Stable rules.\n\n" + tools_prompt(TOOLS) + "\n"
    assert dynamic == {"type": "text", "text": "\nDate: today"}
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert all(block["type"] == "text" for m in body["messages"] for block in m["content"])
    assert '<invoke name="shell">' in body["messages"][1]["content"][0]["text"]
    assert body["messages"][2]["content"][0]["text"].startswith("<function_results>")


@pytest.mark.parametrize("stream", [False, True])
async def test_xml_mode_over_the_openai_wire_end_to_end(stream: bool):
    with ScriptedModelServer([text(REPLY)]) as server:
        provider = XmlToolsProvider(OpenAIProvider(server.url, "k"))
        result = await provider.complete(xml_request(stream=stream))
        await provider.aclose()
        server.assert_consumed()
    assert_parsed(result)
    body = server.requests[0]
    assert "tools" not in body
    system = body["messages"][0]
    assert system["role"] == "system" and "<functions>" in system["content"]
    # the tools block is at the end of the stable part, joined to the dynamic part at one newline
    assert system["content"] == "Stable rules.\n\n" + tools_prompt(TOOLS) + "\nDate: today"
    assert "\u200b" not in system["content"]
    assert [m["role"] for m in body["messages"][1:]] == ["user", "assistant", "user"]
    assert all("tool_calls" not in m and m["role"] != "tool" for m in body["messages"])
    assert body["messages"][3]["content"].startswith("<function_results>")


async def test_xml_mode_answers_plain_text_without_calls():
    with ScriptedModelServer([Step(text="All done.")]) as server:
        provider = XmlToolsProvider(OpenAIProvider(server.url))
        result = await provider.complete(xml_request())
        await provider.aclose()
    assert (result.content, result.tool_calls, result.source, result.finish_reason) == ("All done.", [], "xml", "stop")


async def test_xml_mode_passes_wire_errors_through():
    with ScriptedModelServer([error(503, "busy")]) as server:
        provider = XmlToolsProvider(AnthropicProvider(server.anthropic_url))
        with pytest.raises(ProviderError) as info:
            await provider.complete(xml_request())
        await provider.aclose()
    assert (info.value.status, info.value.retryable) == (503, True)


async def test_xml_mode_passes_a_stream_error_from_the_openai_wire_through():
    with ScriptedModelServer([Step(text=REPLY, stream_error="overloaded_error")]) as server:
        provider = XmlToolsProvider(OpenAIProvider(server.url))
        deltas: list[str] = []
        with pytest.raises(ProviderError) as info:
            await provider.complete(xml_request(stream=True), deltas.append)
        await provider.aclose()
    assert (info.value.kind, info.value.retryable, info.value.provider) == ("overloaded", True, "openai")
    assert "Overloaded" in info.value.message
    assert deltas and "".join(deltas) != REPLY
