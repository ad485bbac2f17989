"""The LLM activity and images (Temporal's ActivityEnvironment, a real context store, the
scripted servers over HTTP): a tool result's image blob reaches a vision model's request as
an image on each wire; a text-only model gets a note and no bytes; only the latest
MAX_IMAGES_SENT images are sent; a missing blob is a note, never a failed call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities.model_view import IMAGE_MISSING_NOTE, IMAGE_OMITTED_NOTE, MAX_IMAGES_SENT
from contracts.activities import LlmCallInput, PromptParams
from core.entries import Entry, ToolCall, ToolResult, UserMessage
from core.messages import ToolCallRequest
from core.settings import ProviderSettings
from core.tool_outcome import ImageRef
from fakes.scripted import ScriptedModelServer, text
from providers.usage import IMAGE_TOKENS
from runtime.store import ContextStore
from tests.configured import llm_activities
from tests.providers.images import b64, jpeg, png

PNG = png(2, 3)
PNG_B64 = b64(PNG)


def image_turn(seq: int, call_id: str, digest: str, *, data: bytes = PNG) -> list[Entry]:
    """A file read of an image: the call and its result, the image by reference only."""
    call = ToolCallRequest(id=call_id, name="file", arguments={"action": "read", "path": f"{call_id}.png"})
    image = ImageRef(media_type="image/png", digest=digest, size=len(data), width=2, height=3)
    return [ToolCall(seq=seq, turn=seq, calls=[call]),
            ToolResult(seq=seq + 1, turn=seq, call_id=call_id, name="file",
                       content=f"Image {call_id}.png: image/png, 2x3, 1 KB", image=image)]


def call_input(entries: list[Entry], *, provider: str = "openai", model: str = "gpt-4o", **fields: Any) -> LlmCallInput:
    return LlmCallInput(task_id="t1", turn=len(entries), provider=provider, model=model,
                        prompt=PromptParams(workspace="/tmp", date="2026-01-01"), tool_names=["message", "file"],
                        stream=False, context_id="ctx-img", total=len(entries), new_entries=entries, **fields)


async def run(tmp_path: Path, entries_of: Any, **fields: Any) -> tuple[dict[str, Any], ContextStore]:
    """One call through the activity; ``entries_of(store)`` builds the context (blobs stored
    in that store). The request body the server received, and the store."""
    store = ContextStore(tmp_path / "c.db")
    entries = [UserMessage(seq=0, text="what do these show?"), *entries_of(store)]
    with ScriptedModelServer([text("seen")]) as model:
        settings = ProviderSettings(openai_base_url=model.url, anthropic_base_url=model.anthropic_url)
        llm = llm_activities(settings, store)
        result = await ActivityEnvironment().run(llm.call_llm, call_input(entries, **fields))
        model.assert_consumed()  # the strict server took the request
    assert result.content == "seen"
    return model.requests[0], store


def one_image(store: ContextStore) -> list[Entry]:
    return image_turn(1, "c1", store.put_blob(PNG_B64))


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


async def test_gpt_4o_gets_the_image_in_a_user_message_after_the_tool_message(tmp_path):
    body, _ = await run(tmp_path, one_image)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert body["messages"][3]["content"] == "Image c1.png: image/png, 2x3, 1 KB"
    assert body["messages"][4]["content"] == [
        {"type": "text", "text": "Image from tool call c1 (file):"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
    ]


async def test_claude_sonnet_4_gets_the_image_inside_the_tool_result(tmp_path):
    body, _ = await run(tmp_path, one_image, provider="anthropic", model="claude-sonnet-4")
    result = body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "c1"
    assert result["content"] == [
        {"type": "text", "text": "Image c1.png: image/png, 2x3, 1 KB"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
    ]


async def test_the_responses_wire_gets_an_input_image(tmp_path):
    body, _ = await run(tmp_path, one_image, provider="openai_responses")
    assert body["input"][-1] == {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "Image from tool call c1 (file):"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_B64}", "detail": "auto"},
    ]}


async def test_xml_tool_calling_sends_the_result_text_then_the_image(tmp_path):
    body, _ = await run(tmp_path, one_image, provider="anthropic_xml", model="claude-sonnet-4")
    last = body["messages"][-1]
    assert last["role"] == "user" and [b["type"] for b in last["content"]] == ["text", "image"]
    assert "<function_results>" in last["content"][0]["text"]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "openai_responses", "anthropic_xml"])
async def test_a_text_only_model_gets_a_note_and_no_image_bytes(tmp_path, provider: str):
    body, _ = await run(tmp_path, one_image, provider=provider, model="scripted-model")
    sent = json.dumps(body)
    assert PNG_B64 not in sent and "image_url" not in sent and '"image"' not in sent and "input_image" not in sent
    note = ('[image not shown: the model scripted-model does not take images; mark it \\"vision\\": true in '
            'AGENT_MODELS_FILE if it does]')
    assert note in sent
    if provider == "openai":
        assert tool_messages(body)[0]["content"] == (
            "Image c1.png: image/png, 2x3, 1 KB\n" + json.loads(f'"{note}"'))


async def test_a_model_marked_vision_in_the_models_file_gets_the_image(tmp_path, monkeypatch):
    models = tmp_path / "models.json"
    models.write_text(json.dumps({"qwen2.5-vl-7b": {"vision": True, "context_window": 32768}}))
    monkeypatch.setenv("AGENT_MODELS_FILE", str(models))
    body, _ = await run(tmp_path, one_image, model="qwen2.5-vl-7b", context_window=32768)
    assert body["messages"][-1]["content"][1]["image_url"]["url"] == f"data:image/png;base64,{PNG_B64}"


async def test_only_the_latest_images_are_sent(tmp_path):
    images = [b64(png(n + 1, 1)) for n in range(MAX_IMAGES_SENT + 2)]

    def five(store: ContextStore) -> list[Entry]:
        entries: list[Entry] = []
        for n, data in enumerate(images):
            entries += image_turn(1 + 2 * n, f"c{n}", store.put_blob(data))
        return entries

    body, _ = await run(tmp_path, five)
    sent = json.dumps(body)
    assert [data in sent for data in images] == [False, False, True, True, True]
    results = tool_messages(body)
    assert [r["content"].endswith(IMAGE_OMITTED_NOTE) for r in results] == [True, True, False, False, False]
    assert IMAGE_OMITTED_NOTE == "[image omitted: only the latest 3 images are sent]"
    shown = [m for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list)]
    assert [m["content"][0]["text"] for m in shown] == [f"Image from tool call c{n} (file):" for n in (2, 3, 4)]


async def test_a_missing_blob_is_a_note_not_a_failure(tmp_path):
    body, _ = await run(tmp_path, lambda store: image_turn(1, "c1", "0" * 64))
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert tool_messages(body)[0]["content"].endswith("\n" + IMAGE_MISSING_NOTE)


async def test_the_window_leaves_room_for_the_images_sent(tmp_path, monkeypatch):
    models = tmp_path / "models.json"
    models.write_text(json.dumps({"seeing": {"vision": True, "max_output": 16384},
                                  "blind": {"vision": False, "max_output": 16384}}))
    monkeypatch.setenv("AGENT_MODELS_FILE", str(models))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    seeing, _ = await run(tmp_path / "a", one_image, model="seeing", context_window=20_000)
    blind, _ = await run(tmp_path / "b", one_image, model="blind", context_window=20_000)
    assert blind["max_tokens"] - seeing["max_tokens"] >= IMAGE_TOKENS - 100


async def test_a_blob_that_holds_no_image_is_a_note_so_the_task_goes_on(tmp_path):
    body, _ = await run(tmp_path, lambda store: image_turn(1, "c1", store.put_blob(b64(b"not an image"))),
                        provider="anthropic", model="claude-sonnet-4")
    result = body["messages"][-1]["content"][0]
    assert result["content"] == ("Image c1.png: image/png, 2x3, 1 KB\n"
                                 "[image not shown: its stored data is not a PNG, JPEG, GIF or WebP image]")


async def test_an_image_is_sent_as_the_type_its_bytes_are(tmp_path):
    jpeg_b64 = b64(jpeg())  # the reference says image/png
    body, _ = await run(tmp_path, lambda store: image_turn(1, "c1", store.put_blob(jpeg_b64)),
                        provider="anthropic", model="claude-sonnet-4")
    source = body["messages"][-1]["content"][0]["content"][1]["source"]
    assert source == {"type": "base64", "media_type": "image/jpeg", "data": jpeg_b64}
