"""Payload compression: large payloads (tool output, model replies) stored zlib-compressed.

A task's history is mostly what its tools read; stored as is, it costs more than what was
said. JSON payloads over ``AGENT_CODEC_COMPRESS_OVER`` bytes (default 1024; 0 turns it off) are
stored as metadata ``encoding: binary/zlib`` with the original ``Payload`` serialized and
compressed as data, when that is smaller. Small payloads (signals, summaries, most inputs)
stay plain, so the Temporal UI reads them without a codec server; the codec server
(``temporal/codec_server.py``) shows the rest. Compression runs before encryption: ciphertext
does not compress. zlib, not zstd: it is in the standard library and the ratio on text is
within a few percent at these sizes.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

ENCODING = b"binary/zlib"
# Only values the project converts itself. Not json/protobuf: the workflow's metadata query
# (its current details, read by the Temporal UI) stays readable without a codec server.
COMPRESSED_ENCODINGS = (b"json/plain",)
LEVEL = 6  # zlib's default: most of level 9's ratio at a third of its time


class CompressionError(ValueError):
    """A payload marked compressed that does not decompress."""


class CompressionCodec(PayloadCodec):
    def __init__(self, over_bytes: int) -> None:
        if over_bytes < 1:
            raise ValueError("compress payloads over at least 1 byte (0 means no compression codec)")
        self.over_bytes = over_bytes

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.compress(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decompress(p) for p in payloads]

    def compress(self, payload: Payload) -> Payload:
        if payload.ByteSize() <= self.over_bytes or payload.metadata.get("encoding") not in COMPRESSED_ENCODINGS:
            return payload
        packed = zlib.compress(payload.SerializeToString(), LEVEL)
        if len(packed) >= payload.ByteSize():  # already compressed data: keep it readable
            return payload
        return Payload(metadata={"encoding": ENCODING}, data=packed)

    @staticmethod
    def decompress(payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload  # small, or written before compression was on
        try:
            return Payload.FromString(zlib.decompress(payload.data))
        except (zlib.error, ValueError) as err:
            raise CompressionError(f"a payload marked {ENCODING.decode()} does not decompress: {err}") from None


class ChainCodec(PayloadCodec):
    """Codecs applied in order on encode (compress, then encrypt) and in reverse on decode."""

    def __init__(self, codecs: Sequence[PayloadCodec]) -> None:
        self.codecs = list(codecs)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = list(payloads)
        for codec in self.codecs:
            out = await codec.encode(out)
        return out

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = list(payloads)
        for codec in reversed(self.codecs):
            out = await codec.decode(out)
        return out
