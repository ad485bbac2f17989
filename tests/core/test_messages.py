"""The message model's images: a message without images serializes exactly as before they
existed (nothing that digests or caches messages sees a change), one with images keeps them;
an image's type is read from its bytes."""

from __future__ import annotations

import json

from core.images import sniff_image_type
from core.messages import ChatMessage, ImagePart


def test_a_message_without_images_leaves_them_out_of_its_json():
    message = ChatMessage(role="tool", content="ok", tool_call_id="c1", name="shell")
    assert message.images == []
    assert "images" not in json.loads(message.model_dump_json())
    assert "images" not in message.model_dump()


def test_a_message_with_images_keeps_them_through_json():
    image = ImagePart(media_type="image/png", data="iVBORw0KGgo=")
    message = ChatMessage(role="tool", content="shot", tool_call_id="c1", name="screenshot", images=[image])
    dumped = json.loads(message.model_dump_json())
    assert dumped["images"] == [{"media_type": "image/png", "data": "iVBORw0KGgo="}]
    assert ChatMessage.model_validate_json(message.model_dump_json()) == message


def test_messages_recorded_before_images_existed_still_load():
    old = {"role": "user", "content": "hi", "tool_calls": [], "tool_call_id": None, "name": None, "thinking": []}
    assert ChatMessage.model_validate(old).images == []


def test_an_image_type_is_read_from_its_bytes():
    assert sniff_image_type(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR") == "image/png"
    assert sniff_image_type(b"\xff\xd8\xff\xe0\x00\x10JFIF") == "image/jpeg"
    assert sniff_image_type(b"GIF87a\x01\x00") == "image/gif"
    assert sniff_image_type(b"RIFF\x24\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert sniff_image_type(b"RIFF\x24\x00\x00\x00WAVEfmt ") is None  # a RIFF file, not an image
    assert sniff_image_type(b"BM\x00\x00") is None  # a BMP: no model API takes it
    assert sniff_image_type(b"") is None
