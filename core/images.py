"""Images by their bytes: which of the four types the model APIs take, and their size.

The model APIs look at an image's bytes, not at a file name or a declared type, so these
are what every part that handles images decides by: the file tool reading an image, the
browser's screenshots, an MCP server's image, the LLM activity checking a stored blob, the
scripted servers refusing what real servers refuse.
"""

from __future__ import annotations


def sniff_image_type(head: bytes) -> str | None:
    """The type of an image by its first bytes (12 are enough): image/png, image/jpeg,
    image/gif, image/webp, or None for anything else. The model APIs look at the bytes, not
    at a name or a declared type (Anthropic refuses an image whose bytes are not of the
    media type it is sent as), so this is what decides."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_dimensions(data: bytes, media_type: str) -> tuple[int, int] | None:
    """(width, height) from the image's header, or None when it is not where the format puts
    it (a truncated or odd file: the image is still sent, just described without its size)."""
    try:
        match media_type:
            case "image/png" if data[12:16] == b"IHDR":
                return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
            case "image/gif" if len(data) >= 10:
                return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
            case "image/webp":
                return _webp_dimensions(data)
            case "image/jpeg":
                return _jpeg_dimensions(data)
    except IndexError:
        return None
    return None


def _webp_dimensions(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":  # lossy: the key frame's header
        return int.from_bytes(data[26:28], "little") & 0x3FFF, int.from_bytes(data[28:30], "little") & 0x3FFF
    if chunk == b"VP8L" and data[20] == 0x2F:  # lossless: 14 bits each, minus one
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:  # extended: the canvas, 24 bits each, minus one
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    """The size in the first start-of-frame segment, walking the segments from the start."""
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0x01, 0xD8) or 0xD0 <= marker <= 0xD7:  # no length field
            at += 2
            continue
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return int.from_bytes(data[at + 7:at + 9], "big"), int.from_bytes(data[at + 5:at + 7], "big")
        at += 2 + int.from_bytes(data[at + 2:at + 4], "big")
    return None
