"""The official ``openai`` and ``anthropic`` SDKs as oracles (tests only, never product code).

Requests: the bodies our adapters build are checked key by key against the SDKs'
typed request params (TypedDicts), and the SDK clients themselves send the same
bodies to the scripted server, which must receive exactly what our adapter sends.
Responses: the scripted server's fixtures, JSON and stream events, are parsed by the
SDKs' response models, directly and through the SDK clients over HTTP.
"""

from __future__ import annotations

import collections.abc
import time
import types
import typing
from typing import Any

import anthropic
import openai
import pytest
import typing_extensions as te
from anthropic.types import Message, RawMessageStreamEvent
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming, MessageCreateParamsStreaming
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat.completion_create_params import (
    CompletionCreateParamsNonStreaming,
    CompletionCreateParamsStreaming,
)
from pydantic import BaseModel, TypeAdapter

from core.messages import ChatMessage, LlmRequest, SystemPrompt, ThinkingPart, ToolCallRequest, ToolSpec
from fakes import scripted_anthropic, scripted_chat
from fakes.scripted import ScriptedModelServer
from fakes.step import Step
from providers.anthropic import AnthropicProvider
from providers.openai import OpenAIProvider
from providers.xml_tools import XmlToolsProvider

# -- a strict checker for the SDKs' TypedDict params ---------------------------
# pydantic's TypeAdapter ignores unknown keys and validates Iterable fields lazily,
# so the TypedDicts are walked here: no unknown keys, required keys present, types.

_FIELDS: dict[type, dict[str, tuple[Any, bool]]] = {}


def _unwrap(hint: Any) -> tuple[Any, bool | None, str | None]:
    """Strip Annotated/Required/NotRequired: (type, required or None, wire alias)."""
    required: bool | None = None
    alias = None
    while True:
        origin = te.get_origin(hint)
        if origin is te.Annotated:
            alias = next((m.alias for m in hint.__metadata__ if getattr(m, "alias", None)), alias)
            hint = te.get_args(hint)[0]
        elif origin in (te.Required, te.NotRequired):
            required = origin is te.Required
            hint = te.get_args(hint)[0]
        else:
            return hint, required, alias


def _totality(td: Any) -> dict[str, bool]:
    """Each key's default requiredness: the ``total`` of the class that declared it."""
    total: dict[str, bool] = {}
    for base in getattr(td, "__orig_bases__", ()):
        if te.is_typeddict(base):
            total.update(_totality(base))
    # A subclass's __annotations__ repeats its bases' keys: only the new ones are its own.
    total.update({key: td.__total__ for key in td.__dict__.get("__annotations__", {}) if key not in total})
    return total


def _fields(td: type) -> dict[str, tuple[Any, bool]]:
    if td not in _FIELDS:
        fields, total = {}, _totality(td)
        for key, hint in te.get_type_hints(td, include_extras=True).items():
            tp, required, alias = _unwrap(hint)
            fields[alias or key] = (tp, total.get(key, td.__total__) if required is None else required)
        _FIELDS[td] = fields
    return _FIELDS[td]


def violations(value: Any, tp: Any, path: str = "$") -> list[str]:
    tp = _unwrap(tp)[0]
    origin = te.get_origin(tp)
    if tp in (Any, object):
        return []
    if origin in (typing.Union, types.UnionType):
        failures = []
        for option in te.get_args(tp):
            found = violations(value, option, path)
            if not found:
                return []
            failures.append(found)
        return min(failures, key=_closeness)
    if origin is typing.Literal:
        return [] if value in te.get_args(tp) else [f"{path}: {value!r} not in {te.get_args(tp)}"]
    if te.is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: expected an object for {tp.__name__}"]
        fields = _fields(tp)
        found = [f"{path}: unknown key {k!r} for {tp.__name__}" for k in value if k not in fields]
        found += [f"{path}: missing {k!r}" for k, (_, req) in fields.items() if req and k not in value]
        for key, item in value.items():
            if key in fields:
                found += violations(item, fields[key][0], f"{path}.{key}")
        return found
    sequence = origin in (list, collections.abc.Iterable, collections.abc.Sequence)
    if sequence or getattr(origin, "__name__", "") == "SequenceNotStr":
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        (item_type,) = te.get_args(tp) or (Any,)
        return [v for i, item in enumerate(value) for v in violations(item, item_type, f"{path}[{i}]")]
    if origin in (dict, collections.abc.Mapping) or tp is dict:
        return [] if isinstance(value, dict) else [f"{path}: expected a mapping"]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [f"{path}: {tp.__name__} is a response model"]
    checks = {type(None): value is None, str: isinstance(value, str), bool: isinstance(value, bool),
              int: isinstance(value, int) and not isinstance(value, bool),
              float: isinstance(value, (int, float)) and not isinstance(value, bool)}
    if tp in checks:
        return [] if checks[tp] else [f"{path}: {value!r} is not {tp.__name__}"]
    raise TypeError(f"the checker does not know {tp!r} at {path}")


def _closeness(found: list[str]) -> tuple[int, int, int]:
    """Rank a union member's failures: a wrong discriminator is farthest, then shallow, then many."""
    wrong_literal = sum(" not in (" in f for f in found)
    depth = max(f.split(":", 1)[0].count(".") + f.split(":", 1)[0].count("[") for f in found)
    return wrong_literal, -depth, len(found)


def extras(model: Any, path: str = "$") -> list[str]:
    """Paths of fields an SDK response model did not declare."""
    if isinstance(model, BaseModel):
        found = [f"{path}.{k}" for k in (model.model_extra or {})]
        for name in type(model).model_fields:
            found += extras(getattr(model, name), f"{path}.{name}")
        return found
    if isinstance(model, list):
        return [e for i, item in enumerate(model) for e in extras(item, f"{path}[{i}]")]
    return []


def test_checker_finds_unknown_keys_missing_keys_and_wrong_types():
    body = {"model": "m", "max_tokens": "8", "messages": [{"role": "user", "content": [{"type": "text"}]}],
            "temperature": 0.5}
    found = violations(body, MessageCreateParamsNonStreaming)
    assert "$: unknown key 'temperature' for MessageCreateParamsNonStreaming" in found
    assert "$.max_tokens: '8' is not int" in found
    assert any("missing 'text'" in f for f in found)


# -- requests -----------------------------------------------------------------

TOOLS = [
    ToolSpec(name="shell", description="Run a command",
             parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    ToolSpec(name="file", description="Files", parameters={"type": "object", "properties": {}}),
]
THOUGHT = ThinkingPart(text="plan", signature="sig", provider="anthropic")
HISTORY = [
    ChatMessage(role="user", content="list files"),
    ChatMessage(
        role="assistant",
        content="Looking.",
        thinking=[THOUGHT],
        tool_calls=[
            ToolCallRequest(id="c1", name="shell", arguments={"command": "ls"}),
            ToolCallRequest(id="c2", name="file", arguments_raw="{oops", parse_error="bad JSON"),
        ],
    ),
    ChatMessage(role="tool", tool_call_id="c1", name="shell", content="a.txt"),
    ChatMessage(role="tool", tool_call_id="c2", name="file", content=""),
    ChatMessage(role="user", content="<system-reminder>one call per turn</system-reminder>"),
    ChatMessage(role="assistant", content="Done."),
    ChatMessage(role="user", content="thanks"),
]
REQUESTS = {
    "minimal": LlmRequest(model="m", system="Be terse.", messages=[ChatMessage(role="user", content="hi")]),
    "history": LlmRequest(model="m", system=SystemPrompt(stable="Stable.\n", dynamic="\nDate"), messages=HISTORY,
                          tools=TOOLS, max_tokens=512),
}


@pytest.mark.parametrize("name", REQUESTS)
@pytest.mark.parametrize("stream", [False, True])
def test_openai_request_bodies_conform_to_the_sdk_params(name: str, stream: bool):
    req = REQUESTS[name].model_copy(update={"stream": stream, "temperature": 0.2})
    params = CompletionCreateParamsStreaming if stream else CompletionCreateParamsNonStreaming
    assert violations(OpenAIProvider("http://x/v1").to_wire(req), params) == []


@pytest.mark.parametrize("name", REQUESTS)
@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_request_bodies_conform_to_the_sdk_params(name: str, stream: bool):
    req = REQUESTS[name].model_copy(update={"stream": stream})
    params = MessageCreateParamsStreaming if stream else MessageCreateParamsNonStreaming
    body = AnthropicProvider("http://x").to_wire(req)
    assert violations(body, params) == []


def test_anthropic_body_with_temperature_conforms_from_api_version_2026_10_21():
    req = REQUESTS["history"].model_copy(update={"temperature": 0.2})
    body = AnthropicProvider("http://x", version="2026-10-21").to_wire(req)
    assert violations(body, MessageCreateParamsNonStreaming) == []


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_xml_mode_request_bodies_conform_to_the_sdk_params(wire: str):
    inner = OpenAIProvider("http://x/v1") if wire == "openai" else AnthropicProvider("http://x")
    params = CompletionCreateParamsNonStreaming if wire == "openai" else MessageCreateParamsNonStreaming
    body = XmlToolsProvider(inner).to_wire(REQUESTS["history"])
    assert "tools" not in body
    assert violations(body, params) == []


async def test_openai_sdk_sends_exactly_our_body_and_parses_the_scripted_answer():
    body = OpenAIProvider("http://x/v1").to_wire(REQUESTS["history"])
    step = Step(text="ok", tool_calls=[("shell", {"command": "ls"})])
    with ScriptedModelServer([step]) as server:
        client = openai.AsyncOpenAI(api_key="sk-o", base_url=server.url, max_retries=0)
        answer = await client.chat.completions.create(**body)
        await client.close()
    assert server.requests == [body]
    assert answer.choices[0].message.tool_calls[0].function.arguments == '{"command": "ls"}'


async def test_anthropic_sdk_sends_exactly_our_body_and_parses_the_scripted_answer():
    body = AnthropicProvider("http://x").to_wire(REQUESTS["history"])
    step = Step(text="ok", reasoning="why", tool_calls=[("shell", {"command": "ls"})], cache=(4, 2))
    with ScriptedModelServer([step]) as server:
        client = anthropic.AsyncAnthropic(api_key="sk-a", base_url=server.anthropic_url, max_retries=0)
        answer = await client.messages.create(**body)
        await client.close()
    assert server.requests == [body]
    assert [b.type for b in answer.content] == ["thinking", "text", "tool_use"]
    assert (answer.usage.cache_read_input_tokens, answer.usage.cache_creation_input_tokens) == (4, 2)


# -- responses ----------------------------------------------------------------

STEPS = {
    "text": Step(text="Hello"),
    "tools": Step(text="Checking.", tool_calls=[("shell", {"command": "ls"}), ("file", {"path": "a", "n": 2})]),
    "thinking": Step(reasoning="step by step", text="4", usage=(100, 7), cache=(60, 20)),
    "empty": Step(),
}
OPENAI_VENDOR_FIELDS = {"reasoning_content"}  # DeepSeek-style reasoning, read by OpenAIProvider


@pytest.mark.parametrize("name", STEPS)
def test_scripted_openai_completion_parses_as_an_sdk_chat_completion(name: str):
    completion = ChatCompletion.model_validate(scripted_chat.completion(STEPS[name], 1, "m", time.time()))
    assert {e.rsplit(".", 1)[-1] for e in extras(completion)} <= OPENAI_VENDOR_FIELDS


@pytest.mark.parametrize("name", STEPS)
@pytest.mark.parametrize("include_usage", [False, True])
def test_scripted_openai_chunks_parse_as_sdk_chunks(name: str, include_usage: bool):
    for chunk in scripted_chat.chunks(STEPS[name], 1, "m", include_usage, time.time()):
        parsed = ChatCompletionChunk.model_validate(chunk)
        assert {e.rsplit(".", 1)[-1] for e in extras(parsed)} <= OPENAI_VENDOR_FIELDS


@pytest.mark.parametrize("name", STEPS)
def test_scripted_anthropic_message_parses_as_an_sdk_message(name: str):
    parsed = Message.model_validate(scripted_anthropic.message(STEPS[name], 1, "m"))
    assert extras(parsed) == []


@pytest.mark.parametrize("name", STEPS)
def test_scripted_anthropic_events_parse_as_sdk_stream_events(name: str):
    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    kinds = []
    for event in scripted_anthropic.events(STEPS[name], 1, "m"):
        kinds.append(event["type"])
        if event["type"] != "ping":  # ping is not in the SDK's union; the SDK skips it
            assert extras(adapter.validate_python(event)) == []
    assert kinds[:2] == ["message_start", "ping"] and kinds[-2:] == ["message_delta", "message_stop"]


def test_scripted_anthropic_error_bodies_parse_as_sdk_error_responses():
    adapter: TypeAdapter[Any] = TypeAdapter(anthropic.types.ErrorResponse)
    for status in (400, 401, 403, 404, 429, 500, 529):
        body = scripted_anthropic.error_body(status, {"error": {"message": "m", "type": "x"}})
        assert adapter.validate_python(body).error.type == scripted_anthropic.error_type_for(status)


async def test_openai_sdk_stream_reads_the_scripted_chunks():
    step = STEPS["tools"]
    with ScriptedModelServer([step]) as server:
        client = openai.AsyncOpenAI(api_key="sk-o", base_url=server.url, max_retries=0)
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
        await client.close()
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Checking."
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 10


def block_dict(block: BaseModel) -> dict[str, Any]:
    return {k: v for k, v in block.model_dump(exclude_none=True).items() if k != "parsed_output"}


async def test_anthropic_sdk_stream_accumulates_the_scripted_events_into_the_same_message():
    step = STEPS["thinking"].model_copy(update={"tool_calls": [("shell", {"command": "ls"})]})
    with ScriptedModelServer([step]) as server:
        client = anthropic.AsyncAnthropic(api_key="sk-a", base_url=server.anthropic_url, max_retries=0)
        async with client.messages.stream(
            model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            final = await stream.get_final_message()
        await client.close()
    expected = Message.model_validate(scripted_anthropic.message(step, 1, "scripted"))
    assert [block_dict(b) for b in final.content] == [block_dict(b) for b in expected.content]
    assert (final.stop_reason, final.usage.output_tokens, final.usage.cache_read_input_tokens) == ("tool_use", 7, 60)
