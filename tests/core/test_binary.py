"""``binary_kind``: the bytes decide, not the declared type; text in its declared charset,
and a character cut at the end of the sample, stay text."""

from __future__ import annotations

import gzip

import pytest

from core.binary import SNIFF_BYTES, binary_kind, size_text


@pytest.mark.parametrize("head, charset, kind", [
    (gzip.compress(b"x" * 100, mtime=0), None, "gzip-compressed data"),
    (b"PK\x03\x04rest", "utf-8", "a zip archive (or an Office document)"),
    (b"\x89PNG\r\n\x1a\n" + b"\0" * 8, None, "image/png"),
    (bytes(range(1, 32)) * 10, None, "binary data"),  # control characters, no NUL
    ("Grüße aus Köln".encode("latin-1"), "iso-8859-1", None),
    ("Grüße aus Köln".encode("utf-16"), "utf-16", None),  # NULs in the bytes, none in the text
    (b"ok \xff\xfe bad", "utf-8", None),  # declared UTF-8 with bad bytes: text with U+FFFD
    (b"ok \xff\xfe bad", None, "binary data"),  # undeclared: mostly not UTF-8
    (b"a" * (SNIFF_BYTES - 1) + "é".encode(), None, None),  # the sample cuts a character
])  # fmt: skip
def test_binary_kind_names_what_is_not_text(head, charset, kind):
    assert binary_kind(head, charset) == kind


def test_sizes_read_as_a_person_reads_them():
    assert [size_text(n) for n in (812, 4300, 5 * 1024 * 1024)] == ["812 bytes", "4.2 KB", "5.0 MB"]
