"""ResponsesProvider (the OpenAI Responses API): the request it builds, checked against the
official SDK's params; its answers from the strict scripted server, plain and streamed;
reasoning carried across turns; errors classified like the HTTP statuses they name."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from openai.types.responses.response_create_params import (
    ResponseCreateParamsNonStreaming,
    ResponseCreateParamsStreaming,
)
from pydantic import TypeAdapter

from core.messages import ChatMessage, LlmRequest, SystemPrompt, ThinkingPart, ToolCallRequest, ToolSpec
from fakes import scripted_responses
from fakes.scripted import ScriptedModelServer, error, text
from fakes.step import Step
from providers.errors import ProviderError
from providers.responses import ResponsesProvider
from tests.providers.test_oracles import extras, violations

SHELL = ToolSpec(name="shell", description="Run a command",
                 parameters={"type": "object", "properties": {"command": {"type": "string"}}})
REASONED = [ThinkingPart(text="**Plan**", signature="gAAAA-enc", provider="openai_responses", id="rs_1"),
            ThinkingPart(text="**Then**", provider="openai_responses", id="rs_1")]


def request(**overrides: Any) -> LlmRequest:
    fields: dict[str, Any] = {"model": "gpt-4.1", "system": "Be terse.",
                              "messages": [ChatMessage(role="user", content="hi")]}
    return LlmRequest(**{**fields, **overrides})


HISTORY = [
    ChatMessage(role="user", content="list and read"),
    ChatMessage(role="assistant", content="Two things.", thinking=REASONED, tool_calls=[
        ToolCallRequest(id="call_a", name="shell", arguments={"command": "ls"}),
        ToolCallRequest(id="call_b", name="shell", arguments_raw="{oops", parse_error="not JSON"),
    ]),
    ChatMessage(role="tool", tool_call_id="call_a", name="shell", content="a.txt"),
    ChatMessage(role="tool", tool_call_id="call_b", name="shell", content="error: arguments are not valid JSON"),
    ChatMessage(role="assistant", content="Done."),
    ChatMessage(role="user", content="thanks"),
]


# -- the request ----------------------------------------------------------------


def test_to_wire_is_stateless_asks_for_encrypted_reasoning_and_sends_stream_either_way():
    body = ResponsesProvider("http://x/v1").to_wire(request())
    assert body == {
        "model": "gpt-4.1",
        "instructions": "Be terse.",
        "input": [{"type": "message", "role": "user", "content": "hi"}],
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "stream": False,
    }
    assert ResponsesProvider("http://x/v1").to_wire(request(stream=True))["stream"] is True


def test_to_wire_sends_function_tools_with_auto_choice_and_max_output_tokens():
    body = ResponsesProvider("http://x/v1").to_wire(request(tools=[SHELL], max_tokens=512, temperature=0.2))
    assert body["tools"] == [{"type": "function", "name": "shell", "description": "Run a command",
                              "parameters": SHELL.parameters, "strict": False}]
    assert (body["tool_choice"], body["max_output_tokens"], body["temperature"]) == ("auto", 512, 0.2)


def test_to_wire_maps_the_conversation_to_input_items():
    system = SystemPrompt(stable="Stable.", dynamic="Date: today")
    body = ResponsesProvider("http://x/v1").to_wire(request(messages=HISTORY, system=system))
    assert body["instructions"] == "Stable.\nDate: today"
    assert body["input"] == [
        {"type": "message", "role": "user", "content": "list and read"},
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAA-enc",
         "summary": [{"type": "summary_text", "text": "**Plan**"}, {"type": "summary_text", "text": "**Then**"}]},
        {"type": "message", "role": "assistant", "content": "Two things."},
        {"type": "function_call", "call_id": "call_a", "name": "shell", "arguments": '{"command": "ls"}'},
        {"type": "function_call", "call_id": "call_b", "name": "shell", "arguments": "{}"},  # a valid placeholder
        {"type": "function_call_output", "call_id": "call_a", "output": "a.txt"},
        {"type": "function_call_output", "call_id": "call_b", "output": "error: arguments are not valid JSON"},
        {"type": "message", "role": "assistant", "content": "Done."},
        {"type": "message", "role": "user", "content": "thanks"},
    ]


@pytest.mark.parametrize(
    "thinking",
    [
        [ThinkingPart(text="no encrypted content", provider="openai_responses", id="rs_2")],
        [ThinkingPart(text="Anthropic's", signature="sig", provider="anthropic")],
        [ThinkingPart(text="reasoning_content", provider="openai")],
        "a plain string recorded before thinking was typed",
    ],
)
def test_to_wire_sends_back_only_its_own_encrypted_reasoning(thinking: Any):
    said = ChatMessage(role="assistant", content="ok", thinking=thinking)
    body = ResponsesProvider("http://x/v1").to_wire(request(messages=[ChatMessage(role="user", content="q"), said]))
    assert [i["type"] for i in body["input"]] == ["message", "message"]


def test_to_wire_leaves_out_reasoning_with_nothing_after_it():
    said = ChatMessage(role="assistant", content="  ", thinking=REASONED)
    body = ResponsesProvider("http://x/v1").to_wire(request(messages=[ChatMessage(role="user", content="q"), said]))
    assert body["input"] == [{"type": "message", "role": "user", "content": "q"}]


@pytest.mark.parametrize("stream", [False, True])
def test_request_bodies_conform_to_the_sdk_params(stream: bool):
    body = ResponsesProvider("http://x/v1").to_wire(request(messages=HISTORY, tools=[SHELL], max_tokens=64,
                                                            temperature=0.1, stream=stream))
    assert violations(body, ResponseCreateParamsStreaming if stream else ResponseCreateParamsNonStreaming) == []


# -- the scripted server's Responses wire, read by the SDK -----------------------

STEPS = {
    "text": Step(text="Hello"),
    "tools": Step(text="Checking.", tool_calls=[("shell", {"command": "ls"}), ("shell", {"command": "pwd"})]),
    "reasoning": Step(reasoning="step by step", tool_calls=[("shell", {"command": "ls"})], usage=(100, 7),
                      cache=(60, 20)),
}
WANTS_REASONING = {"include": ["reasoning.encrypted_content"], "tools": [
    {"type": "function", "name": "shell", "description": "d", "parameters": {"type": "object"}, "strict": False}]}


@pytest.mark.parametrize("name", STEPS)
def test_scripted_response_and_events_parse_as_sdk_models(name: str):
    parsed = Response.model_validate(scripted_responses.response(STEPS[name], 1, "m", WANTS_REASONING))
    assert extras(parsed) == []
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    kinds = [adapter.validate_python(e).type for e in scripted_responses.events(STEPS[name], 1, "m", WANTS_REASONING)]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"


async def test_sdk_client_sends_exactly_our_body_and_parses_the_scripted_answer():
    body = ResponsesProvider("http://x/v1").to_wire(request(tools=[SHELL]))
    with ScriptedModelServer([STEPS["reasoning"]]) as server:
        client = openai.AsyncOpenAI(api_key="sk-o", base_url=server.url, max_retries=0)
        answer = await client.responses.create(**body)
        await client.close()
    assert server.requests == [body]
    assert [item.type for item in answer.output] == ["reasoning", "function_call"]
    assert answer.output[0].encrypted_content == scripted_responses.encrypted(1)  # type: ignore[union-attr]


async def test_sdk_stream_reads_the_scripted_events_into_the_same_response():
    with ScriptedModelServer([STEPS["tools"]]) as server:
        client = openai.AsyncOpenAI(api_key="sk-o", base_url=server.url, max_retries=0)
        async with client.responses.stream(model="m", input="hi", store=False) as stream:
            final = await stream.get_final_response()
        await client.close()
    assert final.output_text == "Checking."
    assert [(i.name, i.arguments) for i in final.output if i.type == "function_call"] == [
        ("shell", '{"command": "ls"}'), ("shell", '{"command": "pwd"}')]


# -- over HTTP ------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "streamed"])
async def test_reasoning_and_calls_round_trip_through_the_strict_server(stream: bool):
    steps = [STEPS["reasoning"], Step(text="Two files.", reasoning="")]
    with ScriptedModelServer(steps) as server:
        provider = ResponsesProvider(server.url, "sk-o")
        deltas: list[str] = []
        first = await provider.complete(request(tools=[SHELL], stream=stream), deltas.append)
        said = ChatMessage(role="assistant", content=first.content, tool_calls=first.tool_calls,
                           thinking=first.thinking)
        said = ChatMessage.model_validate_json(said.model_dump_json())
        answer = ChatMessage(role="tool", tool_call_id=first.tool_calls[0].id, content="a.txt\nb.txt")
        second = await provider.complete(request(tools=[SHELL], stream=stream, messages=[
            ChatMessage(role="user", content="hi"), said, answer]), deltas.append)
        await provider.aclose()
        server.assert_consumed()  # strict: the reasoning item went back with its encrypted content
    assert first.thinking == [ThinkingPart(text="step by step", signature=scripted_responses.encrypted(1),
                                           provider="openai_responses", id="rs_scripted_1")]
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [("call_1_0", "shell", {"command": "ls"})]
    u = first.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (100, 7, 60, 20)
    assert (first.finish_reason, second.finish_reason, second.content) == ("tool_calls", "stop", "Two files.")
    assert [i["type"] for i in server.requests[1]["input"]] == [
        "message", "reasoning", "function_call", "function_call_output"]
    assert server.request_headers[0]["authorization"] == "Bearer sk-o"
    assert deltas == (["Two ", "file", "s."] if stream else [])


async def test_errors_over_http_are_classified_like_their_status():
    steps = [error(429, "slow down", {"retry-after": "3"}), error(503, "down"),
             Step(text="half of it", stream_error="rate_limit_error"), Step(text="never finishes", cut_stream=True),
             error(400, "This model's maximum context length is 8192 tokens")]
    with ScriptedModelServer(steps) as server:
        provider = ResponsesProvider(server.url)
        found: list[ProviderError] = []
        for stream in (False, False, True, True, False):
            with pytest.raises(ProviderError) as info:
                await provider.complete(request(stream=stream))
            found.append(info.value)
        await provider.aclose()
    assert [(e.kind, e.retryable) for e in found] == [
        ("rate_limited", True), ("server_error", True), ("rate_limited", True), ("stream_cut", True),
        ("context_overflow", False)]
    assert found[0].retry_after_s == 3.0 and found[0].message == "slow down"
    assert "scripted rate_limit_error" in found[2].message


@pytest.mark.parametrize(
    ("event", "kind", "retryable"),
    [
        ({"type": "error", "code": None, "message": "An error occurred while processing your request."},
         "stream_error", True),  # no code: most likely the server's trouble
        ({"type": "error", "code": "invalid_prompt", "message": "Invalid prompt: flagged."}, "bad_request", False),
        ({"type": "error", "code": "image_parse_error", "message": "Could not parse the image."}, "stream_error", False),
        ({"type": "error", "error": {"type": "server_error", "code": None, "message": "Try again."}},
         "server_error", True),  # the older shape: the error object under "error"
        ({"type": "error", "code": 503, "message": "Service Unavailable"}, "server_error", True),  # vLLM: a number
    ],
)
async def test_an_error_event_is_classified_by_its_code(event: dict[str, Any], kind: str, retryable: bool):
    frames = f"event: response.created\ndata: {json.dumps({'type': 'response.created', 'response': {}})}\n\n"
    frames += f"event: error\ndata: {json.dumps(event)}\n\n"
    reply = httpx.Response(200, content=frames.encode(), headers={"content-type": "text/event-stream"})
    provider = ResponsesProvider("http://x/v1", client=httpx.AsyncClient(transport=httpx.MockTransport(lambda _: reply)))
    with pytest.raises(ProviderError) as info:
        await provider.complete(request(stream=True))
    assert (info.value.kind, info.value.retryable) == (kind, retryable)


async def test_an_empty_stream_then_an_empty_unstreamed_answer_is_no_outage():
    reply = httpx.Response(200, content=b"", headers={"content-type": "text/event-stream"})
    provider = ResponsesProvider("http://x/v1", client=httpx.AsyncClient(transport=httpx.MockTransport(lambda _: reply)))
    with pytest.raises(ProviderError) as info:
        await provider.complete(request(stream=True))
    assert (info.value.kind, info.value.retryable) == ("empty_response", False)
    assert "nothing, streamed and not streamed" in info.value.message


# -- the strict server on this wire ------------------------------------------------------


def call_item(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "shell", "arguments": "{}"}


def output_item(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


def reasoning_item(number: int, content: str | None = None) -> dict[str, Any]:
    return {"type": "reasoning", "id": f"rs_scripted_{number}", "summary": [],
            "encrypted_content": scripted_responses.encrypted(number) if content is None else content}


USER = {"type": "message", "role": "user", "content": "go"}
REFUSED = {
    "an output for no call": ([USER, output_item("call_9")], "No tool call found for function call output with call_id call_9"),
    "a call never answered": ([USER, call_item("call_1"), USER], "No tool output found for function call call_1."),
    "reasoning without encrypted content": ([USER, reasoning_item(1, ""), call_item("c"), output_item("c")],
                                            "Items are not persisted when `store` is set to false"),
    "reasoning with content it did not issue": ([USER, reasoning_item(1, "forged"), call_item("c"), output_item("c")],
                                                "could not be verified"),
    "reasoning with nothing after it": ([USER, reasoning_item(1), USER],
                                        "of type 'reasoning' was provided without its required following item"),
}


@pytest.mark.parametrize("case", REFUSED)
async def test_strict_server_refuses_what_the_responses_api_refuses(case: str):
    items, words = REFUSED[case]
    with ScriptedModelServer([text("unused")]) as server:
        client = openai.AsyncOpenAI(api_key="sk-o", base_url=server.url, max_retries=0)
        with pytest.raises(openai.BadRequestError) as info:
            await client.responses.create(model="m", input=items, store=False)  # type: ignore[arg-type]
        await client.close()
    assert words in json.dumps(info.value.body) and server.rejected and words in server.rejected[0]


async def test_strict_server_accepts_a_full_stateless_round():
    items = [USER, reasoning_item(1), {"type": "message", "role": "assistant", "content": "ok"}, call_item("c"),
             output_item("c")]
    with ScriptedModelServer([text("fine")]) as server:
        client = openai.AsyncOpenAI(api_key="sk-o", base_url=server.url, max_retries=0)
        answer = await client.responses.create(model="m", input=items, store=False)  # type: ignore[arg-type]
        await client.close()
        server.assert_consumed()
    assert answer.output_text == "fine"
