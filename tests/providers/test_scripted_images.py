"""The strict scripted servers refuse images where and as the real servers do (over real HTTP,
each wire in its own error shape), and take the shapes the wires send."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from fakes.scripted import ScriptedModelServer, text
from fakes.scripted_strict import NO_MMPROJ
from tests.providers.images import JPEG_B64, PNG_B64, b64

PNG_URL = f"data:image/png;base64,{PNG_B64}"


def image_url(url: str = PNG_URL) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


CHAT = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Screenshot"},
        {"role": "user", "content": [{"type": "text", "text": "Image from tool call c1 (screenshot):"}, image_url()]},
    ],
    "tools": [{"type": "function", "function": {"name": "screenshot", "parameters": {"type": "object"}}}],
    "tool_choice": "auto",
}


def chat(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    body = copy.deepcopy(CHAT)
    change(body)
    return body


def shown(*parts: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """The images message's parts replaced by ``parts``."""
    return lambda b: b["messages"][4].update(content=list(parts))


OPENAI_REFUSED = {  # what breaks the rule: (code, words of the message, rule recorded)
    "image in a tool message": (
        lambda b: b["messages"][3].update(content=[{"type": "text", "text": "Screenshot"}, image_url()]),
        "invalid_value",
        "Invalid 'messages[3]'. Image URLs are only allowed for messages with role 'user', but this message "
        "with role 'tool' contains an image URL.", "messages[3].content[1]: image in a message of role tool"),
    "image in an assistant message": (
        lambda b: b["messages"][2].update(content=[image_url()]), "invalid_value",
        "but this message with role 'assistant' contains an image URL",
        "messages[2].content[0]: image in a message of role assistant"),
    "not a data URL": (
        shown(image_url("iVBORw0KGgo=")), "invalid_value",
        "but got a value without the 'data:' prefix",
        "messages[4].content[0].image_url.url: a value without the 'data:' prefix"),
    "a data URL without base64": (
        shown(image_url("data:image/png,abc")), "invalid_value", "Expected a base64-encoded data URL",
        "messages[4].content[0].image_url.url: a value that is not base64-encoded"),
    "empty base64": (
        shown(image_url("data:image/png;base64,")), "invalid_value", "but got empty base64-encoded bytes",
        "messages[4].content[0].image_url.url: empty base64-encoded bytes"),
    "bad base64": (
        shown(image_url("data:image/png;base64,%%%not-base64")), "invalid_value", "an invalid base64-encoded value",
        "messages[4].content[0].image_url.url: an invalid base64-encoded value"),
    "unsupported media type": (
        shown(image_url(f"data:image/bmp;base64,{PNG_B64}")), "invalid_image_format",
        "You uploaded an unsupported image", "messages[4].content[0].image_url.url: unsupported image"),
    "bytes that are no image": (
        shown(image_url(f"data:image/png;base64,{b64(b'just some text')}")), "invalid_image_format",
        "You uploaded an unsupported image", "messages[4].content[0].image_url.url: unsupported image"),
    "image_url as a string": (
        shown({"type": "image_url", "image_url": PNG_URL}), "invalid_type",
        "expected an object, but got a string instead", "messages[4].content[0].image_url: not an object with a url"),
    "an unknown part type": (
        shown({"type": "picture", "data": PNG_B64}), "invalid_value",
        "Invalid value: 'picture'. Supported values are: 'text', 'image_url', 'input_audio', and 'file'.",
        "messages[4].content[0].type: 'picture' in a user message"),
    "a refusal part in a user message": (
        shown({"type": "refusal", "refusal": "no"}), "invalid_value", "Invalid value: 'refusal'",
        "messages[4].content[0].type: 'refusal' in a user message"),
}


@pytest.mark.parametrize(("change", "code", "words", "rule"), OPENAI_REFUSED.values(), ids=list(OPENAI_REFUSED))
def test_the_chat_wire_refuses_images_as_openai_does(change, code, words, rule):
    with ScriptedModelServer([text("unused")]) as server:
        response = httpx.post(server.url + "/chat/completions", json=chat(change), timeout=5.0)
        error = response.json()["error"]
        assert response.status_code == 400 and error["type"] == "invalid_request_error" and error["code"] == code
        assert words in error["message"]
        assert server.rejected == [rule]
        assert httpx.post(server.url + "/chat/completions", json=CHAT, timeout=5.0).status_code == 200


@pytest.mark.parametrize("url", [PNG_URL, f"data:image/jpeg;base64,{JPEG_B64}", "https://example.com/a.png"])
def test_the_chat_wire_takes_data_urls_and_web_urls_in_user_messages(url: str):
    with ScriptedModelServer([text("seen")]) as server:
        response = httpx.post(server.url + "/chat/completions", json=chat(shown(image_url(url))), timeout=5.0)
    assert response.status_code == 200 and server.rejected == []


def test_llama_cpp_without_a_projector_refuses_any_image_with_its_500():
    with ScriptedModelServer([text("text only")], multimodal=False) as server:
        response = httpx.post(server.url + "/chat/completions", json=CHAT, timeout=5.0)
        assert response.status_code == 500
        assert response.json() == {"error": {"code": 500, "message": NO_MMPROJ, "type": "server_error"}}
        assert NO_MMPROJ == ("image input is not supported - hint: if this is unexpected, you may need to "
                             "provide the mmproj")
        assert server.rejected == ["messages[4].content[1]: image without mmproj"]
        plain = chat(lambda b: b["messages"].pop())
        assert httpx.post(server.url + "/chat/completions", json=plain, timeout=5.0).status_code == 200


# -- Anthropic ----------------------------------------------------------------------------

def image_block(media_type: str = "image/png", data: str = PNG_B64) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def messages_body(result_content: Any, *more: dict[str, Any]) -> dict[str, Any]:
    return {"model": "claude-sonnet-4", "max_tokens": 1024, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "look"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "screenshot", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": result_content}]},
        *more,
    ]}


WITH_IMAGE = [{"type": "text", "text": "Screenshot"}, image_block()]
CACHED = {"type": "ephemeral"}
ANTHROPIC_REFUSED = {
    "an unsupported media type": (
        messages_body([image_block("image/bmp")]),
        "messages.2.content.0.tool_result.content.0.image.source.base64.media_type: Input should be 'image/jpeg', "
        "'image/png', 'image/gif' or 'image/webp'"),
    "bad base64": (
        messages_body([image_block(data="%%%")]), "messages.2.content.0.tool_result.content.0.image.source.base64.data"),
    "bytes that are no image": (
        messages_body([image_block(data=b64(b"hello"))]), "does not represent a valid image"),
    "a media type that is not the bytes'": (
        messages_body([image_block("image/jpeg")]),
        "image.source.base64: The image was specified using the image/jpeg media type, but the image appears to be "
        "a image/png image"),
    "an image in an assistant message": (
        messages_body(WITH_IMAGE, {"role": "assistant", "content": [image_block()]}),
        "messages.3.content.0: Input tag 'image'"),
    "an empty text block in a tool_result": (
        messages_body([{"type": "text", "text": " "}, image_block()]),
        "messages.2.content.0.tool_result.content.0: text content blocks must contain non-whitespace text"),
    "an unknown block in a tool_result": (
        messages_body([{"type": "picture"}]), "messages.2.content.0.tool_result.content.0: Input tag 'picture'"),
    "five breakpoints, two inside a tool_result": (
        {**messages_body([{"type": "text", "text": "a", "cache_control": CACHED}, {**image_block(), "cache_control": CACHED}]),
         "system": [{"type": "text", "text": f"s{i}", "cache_control": CACHED} for i in range(3)]},
        "A maximum of 4 blocks with cache_control may be provided. Found 5."),
}


@pytest.mark.parametrize(("body", "words"), ANTHROPIC_REFUSED.values(), ids=list(ANTHROPIC_REFUSED))
def test_the_messages_wire_refuses_images_as_anthropic_does(body, words):
    with ScriptedModelServer([text("unused")]) as server:
        response = httpx.post(server.anthropic_url + "/v1/messages", json=body, timeout=5.0)
    assert response.status_code == 400
    assert response.json()["type"] == "error" and response.json()["error"]["type"] == "invalid_request_error"
    assert words in response.json()["error"]["message"] and len(server.rejected) == 1


@pytest.mark.parametrize("body", [
    messages_body(WITH_IMAGE),
    messages_body([image_block("image/jpeg", JPEG_B64)]),
    messages_body("ok", {"role": "assistant", "content": [{"type": "text", "text": "and?"}]},
                  {"role": "user", "content": [{"type": "text", "text": "this"}, image_block()]}),
    messages_body([{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]),
], ids=["in a tool_result", "image alone", "in user content", "by url"])
def test_the_messages_wire_takes_images_in_tool_results_and_user_content(body):
    with ScriptedModelServer([text("seen")]) as server:
        response = httpx.post(server.anthropic_url + "/v1/messages", json=body, timeout=5.0)
    assert response.status_code == 200 and server.rejected == []


# -- Responses ----------------------------------------------------------------------------

def responses_body(*content: dict[str, Any], role: str = "user") -> dict[str, Any]:
    return {"model": "gpt-4o", "store": False, "input": [
        {"type": "message", "role": "user", "content": "look"},
        {"type": "function_call", "call_id": "c1", "name": "screenshot", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "Screenshot"},
        {"type": "message", "role": role, "content": list(content)},
    ]}


def input_image(url: str = PNG_URL, **fields: Any) -> dict[str, Any]:
    return {"type": "input_image", "image_url": url, "detail": "auto", **fields}


RESPONSES_REFUSED = {
    "an image in an assistant message": (responses_body(input_image(), role="assistant"),
                                         "Invalid value: 'input_image'. Supported values are: 'output_text', 'refusal'."),
    "not a data URL": (responses_body(input_image("abc")), "but got a value without the 'data:' prefix."),
    "empty base64": (responses_body(input_image("data:image/png;base64,")), "but got empty base64-encoded bytes."),
    "bad base64": (responses_body(input_image("data:image/png;base64,@@")), "an invalid base64-encoded value."),
    "unsupported media type": (responses_body(input_image(f"data:image/tiff;base64,{PNG_B64}")),
                               "You uploaded an unsupported image"),
    "an unknown detail": (responses_body(input_image(detail="max")), "Invalid value: 'max'"),
    "a chat-style part": (responses_body({"type": "image_url", "image_url": {"url": PNG_URL}}),
                          "Invalid value: 'image_url'"),
}


@pytest.mark.parametrize(("body", "words"), RESPONSES_REFUSED.values(), ids=list(RESPONSES_REFUSED))
def test_the_responses_wire_refuses_images_as_openai_does(body, words):
    with ScriptedModelServer([text("unused")]) as server:
        response = httpx.post(server.url + "/responses", json=body, timeout=5.0)
    assert response.status_code == 400 and response.json()["error"]["type"] == "invalid_request_error"
    assert words in response.json()["error"]["message"] and len(server.rejected) == 1


def test_the_responses_wire_takes_input_images_in_user_messages():
    body = responses_body({"type": "input_text", "text": "Image from tool call c1 (screenshot):"}, input_image())
    with ScriptedModelServer([text("seen")]) as server:
        response = httpx.post(server.url + "/responses", json=body, timeout=5.0)
    assert response.status_code == 200 and server.rejected == []
