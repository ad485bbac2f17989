"""Small real images for the image tests, built here so no binary fixture is needed: each is
a well-formed file of its format (a PNG that any decoder reads), with the header fields the
servers and the file tool look at."""

from __future__ import annotations

import base64
import struct
import zlib


def png(width: int = 2, height: int = 3) -> bytes:
    """A valid RGB PNG of ``width`` x ``height`` grey pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80\x80\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def jpeg(width: int = 640, height: int = 480) -> bytes:
    """The segments of a baseline JPEG up to its frame header (an APP0 segment first, as a
    JFIF file has), then the end marker: enough for anything that reads its type and size."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def gif(width: int = 5, height: int = 7) -> bytes:
    """A GIF89a header and an empty image: type and size as a GIF states them."""
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00" + b"\x3b"


def webp_lossless(width: int = 9, height: int = 4) -> bytes:
    """A RIFF/WEBP file with a VP8L (lossless) chunk header holding its size."""
    bits = (width - 1) | ((height - 1) << 14)
    payload = b"\x2f" + struct.pack("<I", bits) + b"\x00" * 8
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(payload)) + b"WEBP" + b"VP8L" + struct.pack("<I", len(payload)) + payload


def webp_lossy(width: int = 33, height: int = 17) -> bytes:
    """A RIFF/WEBP file with a VP8 (lossy) key frame header holding its size."""
    payload = b"\x00\x00\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 8
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(payload)) + b"WEBP" + b"VP8 " + struct.pack("<I", len(payload)) + payload


def webp_extended(width: int = 1000, height: int = 700) -> bytes:
    """A RIFF/WEBP file with a VP8X (extended) chunk holding the canvas size."""
    payload = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(payload)) + b"WEBP" + b"VP8X" + struct.pack("<I", len(payload)) + payload


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


PNG_B64 = b64(png())
JPEG_B64 = b64(jpeg())
