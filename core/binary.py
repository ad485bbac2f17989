"""What bytes are, when they are not text: so that a compressed or binary body is named by
its type and size instead of being decoded into a model's context as replacement characters.

A declared type (a ``Content-Type``, a chat's media type, a file name) is a claim; the bytes
decide. ``binary_kind`` looks at the first bytes: a known signature (gzip, zip, PDF, an
image, an executable...), a NUL byte, or more than ``CONTROL_SHARE`` of control characters
(and of bytes that are not UTF-8, when no charset is declared) make them binary. Pure: fetch_url, the file tool and attachments call it.
"""

from __future__ import annotations

import codecs

from core.images import sniff_image_type

SNIFF_BYTES = 8192  # how much of the start is looked at
# Signatures at the start of the bytes, and what they are called.
SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-zip archive"),
    (b"PK\x03\x04", "a zip archive (or an Office document)"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"%PDF-", "a PDF document"),
    (b"\x7fELF", "an ELF executable"),
    (b"MZ", "a Windows executable"),
    (b"\x00asm", "a WebAssembly module"),
    (b"SQLite format 3\x00", "an SQLite database"),
)
CONTROL_SHARE = 0.1  # above this share of control characters (or undecodable bytes): binary
_TEXT_CONTROLS = frozenset("\t\n\r\f\v\x1b")


def binary_kind(head: bytes, charset: str | None = None) -> str | None:
    """What the bytes ``head`` (the start of a body or file, in ``charset``, UTF-8 if none)
    are when they are not text, as a person names it ("gzip-compressed data", "image/png"),
    or None for text."""
    for signature, name in SIGNATURES:
        if head.startswith(signature):
            return name
    if image := sniff_image_type(head[:16]):
        return image
    sample = head[:SNIFF_BYTES]
    try:
        text = sample.decode(codecs.lookup(charset or "utf-8").name, errors="replace")
    except LookupError:
        text = sample.decode("utf-8", errors="replace")
    if len(sample) == SNIFF_BYTES:  # a character cut at the end is no sign of binary
        text = text.rstrip("\ufffd")
    if "\0" in text:
        return "binary data"
    # Bytes that do not decode count only when no charset was declared: a page that says
    # UTF-8 and has a few bad bytes is text with replacement characters.
    odd = sum(1 for c in text if (c == "\ufffd" and charset is None) or (c < " " and c not in _TEXT_CONTROLS))
    return "binary data" if text and odd / len(text) > CONTROL_SHARE else None


def size_text(n: int) -> str:
    """A byte count as a person reads it: 812 bytes, 4.2 KB, 5.0 MB."""
    if n < 1024:
        return f"{n:,} bytes"
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MB"
