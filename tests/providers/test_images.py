"""Images on every wire: a tool result's images in exactly the documented shape (checked key by
key against the official SDKs' typed params, tests/providers/test_oracles.py), accepted by
the strict scripted servers, and never where the API refuses them (an OpenAI tool message,
the inside of an Anthropic block other than a tool_result)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

from core.errors import ErrorKind
from core.messages import ChatMessage, ImagePart, LlmRequest, SystemPrompt, ThinkingPart, ToolCallRequest, ToolSpec
from core.settings import ModelTableSettings
from fakes.scripted import ScriptedModelServer, text
from providers.anthropic import AnthropicProvider
from providers.anthropic_wire import MAX_BREAKPOINTS, count_breakpoints
from providers.errors import ProviderError
from providers.model_table import BUILTIN_MODELS, accepts_images, load_models
from providers.openai import OpenAIProvider
from providers.responses import ResponsesProvider
from providers.usage import IMAGE_TOKENS, estimate_tokens, request_text
from providers.xml_tools import XmlToolsProvider
from tests.providers.images import JPEG_B64, PNG_B64
from tests.providers.test_oracles import violations

PNG = ImagePart(media_type="image/png", data=PNG_B64)
JPEG = ImagePart(media_type="image/jpeg", data=JPEG_B64)
TOOLS = [ToolSpec(name="screenshot", description="Take a screenshot", parameters={"type": "object", "properties": {}}),
         ToolSpec(name="file", description="Files", parameters={"type": "object", "properties": {}})]


def call(call_id: str, name: str = "screenshot") -> ToolCallRequest:
    return ToolCallRequest(id=call_id, name=name, arguments={})


# One turn with two calls: the first produced an image, the second did not; then a turn
# whose one call produced an image, then the user speaks.
CONVERSATION = [
    ChatMessage(role="user", content="What is on the page?"),
    ChatMessage(role="assistant", content="Looking.", tool_calls=[call("c1"), call("c2", "file")]),
    ChatMessage(role="tool", tool_call_id="c1", name="screenshot", content="Screenshot of https://x.test",
                images=[PNG]),
    ChatMessage(role="tool", tool_call_id="c2", name="file", content="notes"),
    ChatMessage(role="assistant", tool_calls=[call("c3", "file")]),
    ChatMessage(role="tool", tool_call_id="c3", name="file", content="Image a.jpg: image/jpeg, 640x480, 1 KB",
                images=[JPEG]),
    ChatMessage(role="user", content="and now?"),
]
REQUEST = LlmRequest(model="m", system=SystemPrompt(stable="Stable.", dynamic="Date"), messages=CONVERSATION,
                     tools=TOOLS, max_tokens=512)


def data_url(image: ImagePart) -> str:
    return f"data:{image.media_type};base64,{image.data}"


# -- OpenAI chat completions ----------------------------------------------------------


def test_openai_sends_the_images_of_a_turn_in_one_user_message_after_its_tool_messages():
    messages = OpenAIProvider("http://x/v1").to_wire(REQUEST)["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "user",
                                             "assistant", "tool", "user", "user"]
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "Screenshot of https://x.test"}
    assert messages[5] == {"role": "user", "content": [
        {"type": "text", "text": "Image from tool call c1 (screenshot):"},
        {"type": "image_url", "image_url": {"url": data_url(PNG)}},
    ]}
    assert messages[8]["content"] == [
        {"type": "text", "text": "Image from tool call c3 (file):"},
        {"type": "image_url", "image_url": {"url": data_url(JPEG)}},
    ]
    assert messages[9] == {"role": "user", "content": "and now?"}
    for message in messages:  # only user messages carry images
        if message["role"] != "user":
            assert "image_url" not in json.dumps(message)


def test_openai_names_each_call_of_one_turn_before_its_images():
    conversation = [
        ChatMessage(role="user", content="compare"),
        ChatMessage(role="assistant", tool_calls=[call("a"), call("b")]),
        ChatMessage(role="tool", tool_call_id="a", name="screenshot", content="one", images=[PNG]),
        ChatMessage(role="tool", tool_call_id="b", name="screenshot", content="two", images=[JPEG]),
    ]
    request = LlmRequest(model="m", system=SystemPrompt(stable="s"), messages=conversation)
    messages = OpenAIProvider("http://x/v1").to_wire(request)["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert [p["type"] for p in messages[-1]["content"]] == ["text", "image_url", "text", "image_url"]
    assert messages[-1]["content"][2] == {"type": "text", "text": "Image from tool call b (screenshot):"}


def test_openai_body_with_images_conforms_to_the_sdk_params():
    body = OpenAIProvider("http://x/v1").to_wire(REQUEST)
    assert violations(body, CompletionCreateParamsNonStreaming) == []


# -- Anthropic Messages ------------------------------------------------------------------


def test_anthropic_puts_the_image_inside_the_tool_result_block():
    messages = AnthropicProvider("http://x").to_wire(REQUEST)["messages"]
    results = [b for m in messages for b in m["content"] if b["type"] == "tool_result"]
    first = {k: v for k, v in results[0].items() if k != "cache_control"}
    assert first == {"type": "tool_result", "tool_use_id": "c1", "content": [
        {"type": "text", "text": "Screenshot of https://x.test"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
    ]}
    assert results[1]["content"] == "notes"  # no image: the plain string, as before
    assert results[2]["content"][1]["source"]["media_type"] == "image/jpeg"
    assert not [b for m in messages for b in m["content"] if b["type"] == "image"]  # none outside a tool_result


def test_anthropic_image_without_text_is_the_image_block_alone():
    conversation = [ChatMessage(role="user", content="shoot"), ChatMessage(role="assistant", tool_calls=[call("c1")]),
                    ChatMessage(role="tool", tool_call_id="c1", name="screenshot", content="", images=[PNG])]
    body = AnthropicProvider("http://x").to_wire(LlmRequest(model="m", system=SystemPrompt(stable="s"), messages=conversation))
    assert [b["type"] for b in body["messages"][-1]["content"][0]["content"]] == ["image"]


def test_anthropic_body_with_images_conforms_to_the_sdk_params():
    assert violations(AnthropicProvider("http://x").to_wire(REQUEST), MessageCreateParamsNonStreaming) == []


def test_anthropic_cache_breakpoints_stay_four_and_on_top_level_blocks_with_images():
    thought = ThinkingPart(text="plan", signature="sig", provider="anthropic")
    conversation: list[ChatMessage] = [ChatMessage(role="user", content="go")]
    for n in range(5):
        conversation += [ChatMessage(role="assistant", thinking=[thought], tool_calls=[call(f"c{n}")]),
                         ChatMessage(role="tool", tool_call_id=f"c{n}", name="screenshot", content=f"shot {n}",
                                     images=[PNG])]
    request = LlmRequest(model="m", system=SystemPrompt(stable="S", dynamic="D"), messages=conversation, tools=TOOLS,
                         max_tokens=8000, thinking_budget=2048)
    body = AnthropicProvider("http://x").to_wire(request)
    assert count_breakpoints(body) == MAX_BREAKPOINTS
    nested = [inner for m in body["messages"] for b in m["content"] if isinstance(b.get("content"), list)
              for inner in b["content"]]
    assert not [b for b in nested if "cache_control" in b]
    assert "cache_control" in body["messages"][-1]["content"][-1]  # the newest tool_result, images and all
    assert violations(body, MessageCreateParamsNonStreaming) == []


def test_count_breakpoints_counts_marks_inside_a_tool_result():
    block = {"type": "tool_result", "tool_use_id": "c1",
             "content": [{"type": "text", "text": "t", "cache_control": {"type": "ephemeral"}}]}
    assert count_breakpoints({"messages": [{"role": "user", "content": [block]}]}) == 1


# -- OpenAI Responses --------------------------------------------------------------------


def test_responses_shows_the_images_in_a_user_message_after_the_function_call_outputs():
    items = ResponsesProvider("http://x/v1").to_wire(REQUEST)["input"]
    kinds = [(i.get("type"), i.get("role")) for i in items]
    assert kinds == [("message", "user"), ("message", "assistant"), ("function_call", None),
                     ("function_call", None), ("function_call_output", None), ("function_call_output", None),
                     ("message", "user"), ("function_call", None), ("function_call_output", None),
                     ("message", "user"), ("message", "user")]
    assert items[4] == {"type": "function_call_output", "call_id": "c1", "output": "Screenshot of https://x.test"}
    assert items[6] == {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "Image from tool call c1 (screenshot):"},
        {"type": "input_image", "image_url": data_url(PNG), "detail": "auto"},
    ]}
    assert items[9]["content"][1] == {"type": "input_image", "image_url": data_url(JPEG), "detail": "auto"}


def test_responses_body_with_images_conforms_to_the_sdk_params():
    body = ResponsesProvider("http://x/v1").to_wire(REQUEST)
    assert violations(body, ResponseCreateParamsNonStreaming) == []
    body["input"][6]["content"][1].pop("detail")  # the checker does look inside: detail is required
    assert any("detail" in v for v in violations(body, ResponseCreateParamsNonStreaming))


# -- XML tool calling (tool results as user text) ------------------------------------------


def test_xml_mode_over_openai_sends_the_results_text_then_its_image():
    body = XmlToolsProvider(OpenAIProvider("http://x/v1")).to_wire(REQUEST)
    assert "tools" not in body and violations(body, CompletionCreateParamsNonStreaming) == []
    shown = [m for m in body["messages"] if isinstance(m["content"], list)]
    assert len(shown) == 2 and all(m["role"] == "user" for m in shown)
    first = shown[0]["content"]
    assert first[0]["type"] == "text" and "<function_results>" in first[0]["text"] and "notes" in first[0]["text"]
    assert first[1:] == [{"type": "image_url", "image_url": {"url": data_url(PNG)}}]


def test_xml_mode_over_anthropic_sends_the_results_text_then_its_image():
    body = XmlToolsProvider(AnthropicProvider("http://x")).to_wire(REQUEST)
    assert violations(body, MessageCreateParamsNonStreaming) == []
    user = [m for m in body["messages"] if any(b["type"] == "image" for b in m["content"])]
    assert [b["type"] for b in user[0]["content"]] == ["text", "image"]
    assert user[0]["content"][1]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG_B64}


# -- the strict scripted servers take what we send -------------------------------------------


@pytest.mark.parametrize("wire", ["openai", "anthropic", "openai_responses", "xml_openai", "xml_anthropic"])
async def test_every_wire_body_with_images_passes_the_strict_servers(wire: str):
    with ScriptedModelServer([text("seen")]) as server:
        providers: dict[str, Any] = {
            "openai": lambda: OpenAIProvider(server.url),
            "anthropic": lambda: AnthropicProvider(server.anthropic_url),
            "openai_responses": lambda: ResponsesProvider(server.url),
            "xml_openai": lambda: XmlToolsProvider(OpenAIProvider(server.url)),
            "xml_anthropic": lambda: XmlToolsProvider(AnthropicProvider(server.anthropic_url)),
        }
        provider = providers[wire]()
        result = await provider.complete(REQUEST)
        await provider.aclose()
        server.assert_consumed()
    assert result.content == "seen" and server.rejected == []
    assert PNG_B64 in json.dumps(server.requests[0]) and JPEG_B64 in json.dumps(server.requests[0])


# -- which models take images ------------------------------------------------------------------


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini-2025-04-14", "o3", "o4-mini",
                                   "claude-sonnet-4", "claude-sonnet-4-20250514", "claude-haiku-4-5",
                                   "anthropic/claude-opus-4-1"])
def test_the_builtin_vision_models_take_images(model: str):
    assert accepts_images(model, BUILTIN_MODELS)


@pytest.mark.parametrize("model", ["scripted-model", "demo-scripted", "qwen2.5-7b-instruct", "llama-3-8b"])
def test_scripted_and_unknown_models_do_not(model: str):
    assert not accepts_images(model, BUILTIN_MODELS)


def test_the_models_file_marks_a_model_as_taking_images_or_not(tmp_path: Path):
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"qwen2.5-vl-7b": {"vision": True, "context_window": 32768},
                                "gpt-4o": {"vision": False}, "gpt-4.1": {"context_window": 500_000}}))
    models = load_models(ModelTableSettings(models_file=path))
    assert accepts_images("qwen2.5-vl-7b", models) and not accepts_images("gpt-4o", models)
    assert accepts_images("gpt-4.1", models)  # an override of other keys keeps the built-in vision


@pytest.mark.parametrize("value", ["true", 1, None, "yes"])
def test_the_models_file_takes_only_a_boolean_vision(tmp_path: Path, value: Any):
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"local": {"vision": value}}))
    with pytest.raises(ValueError, match="local: vision must be true or false"):
        load_models(ModelTableSettings(models_file=path))


# -- usage estimates ---------------------------------------------------------------------------


@pytest.mark.parametrize("provider", [OpenAIProvider("http://x/v1"), AnthropicProvider("http://x"),
                                      ResponsesProvider("http://x/v1")], ids=lambda p: p.name)
def test_an_estimate_counts_an_image_as_image_tokens_not_its_base64(provider: Any):
    big = ImagePart(media_type="image/png", data=PNG_B64 + "A" * 400_000)
    conversation = [*CONVERSATION[:2], CONVERSATION[2].model_copy(update={"images": [big]}), *CONVERSATION[3:]]
    body = provider.to_wire(REQUEST.model_copy(update={"messages": conversation}))
    without = provider.to_wire(REQUEST.model_copy(update={"messages": [
        m.model_copy(update={"images": []}) for m in CONVERSATION]}))
    tokens = estimate_tokens(request_text(body))
    assert 2 * IMAGE_TOKENS - 100 < tokens - estimate_tokens(request_text(without)) < 2 * IMAGE_TOKENS + 100
    assert tokens < 10_000


# -- a model that takes no images ------------------------------------------------------------


async def test_llama_cpp_refusing_images_is_not_retried_and_says_how_to_fix_it():
    with ScriptedModelServer([text("unused")], multimodal=False) as server:
        provider = OpenAIProvider(server.url)
        with pytest.raises(ProviderError) as err:
            await provider.complete(REQUEST)
        await provider.aclose()
    assert err.value.status == 500 and not err.value.retryable and err.value.kind == ErrorKind.IMAGES_REFUSED
    assert "image input is not supported" in err.value.message
    assert 'set "vision": false for it in AGENT_MODELS_FILE' in err.value.message
