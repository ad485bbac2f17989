"""Compression of large payloads: round trips, stays plain when small or incompressible,
runs before encryption, and is readable through the codec server."""

from __future__ import annotations

import os
import threading

import httpx
import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload

from core.settings import CodecSettings
from temporal.codec import ENCODING as ENCRYPTED
from temporal.codec import EncryptionCodec, codec_for, data_converter, generate_key
from temporal.codec_server import make_server
from temporal.compression import ENCODING, ChainCodec, CompressionCodec, CompressionError

LOG = "".join(
    f"2026-11-25T10:{i // 60:02d}:{i % 60:02d}Z INFO request id={i * 7919 % 10007} path=/api/items/{i % 37} status=200\n"
    for i in range(80)
).encode()


def _payload(data: bytes) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=data)


async def test_a_large_payload_is_stored_compressed_and_read_back_unchanged():
    codec = CompressionCodec(1024)
    original = _payload(LOG)
    (stored,) = await codec.encode([original])
    assert stored.metadata["encoding"] == ENCODING
    assert stored.ByteSize() < original.ByteSize() / 3  # log lines compress well
    assert await codec.decode([stored]) == [original]


async def test_small_and_incompressible_payloads_stay_plain():
    codec = CompressionCodec(1024)
    small, noise = _payload(b'{"reason": "stop"}'), _payload(os.urandom(4096))
    assert await codec.encode([small, noise]) == [small, noise]


async def test_protobuf_payloads_such_as_the_ui_metadata_query_stay_plain():
    metadata = Payload(metadata={"encoding": b"json/protobuf"}, data=LOG)
    assert await CompressionCodec(1024).encode([metadata]) == [metadata]


async def test_a_corrupt_compressed_payload_is_a_clear_error():
    with pytest.raises(CompressionError, match="does not decompress"):
        await CompressionCodec(1024).decode([Payload(metadata={"encoding": ENCODING}, data=b"not zlib")])


async def test_compression_runs_before_encryption_and_both_undo_in_reverse():
    codec = codec_for(CodecSettings(keys=f"k1:{generate_key()}", compress_over=512))
    assert isinstance(codec, ChainCodec)
    assert [type(c) for c in codec.codecs] == [CompressionCodec, EncryptionCodec]
    original = _payload(LOG)
    (stored,) = await codec.encode([original])
    assert stored.metadata["encoding"] == ENCRYPTED
    assert stored.ByteSize() < original.ByteSize() / 3  # compressed, then sealed
    assert await codec.decode([stored]) == [original]


def test_compression_is_on_by_default_and_off_at_zero():
    assert isinstance(codec_for(CodecSettings()), CompressionCodec)
    assert codec_for(CodecSettings.from_env({"AGENT_CODEC_COMPRESS_OVER": "0"})) is None
    assert codec_for(CodecSettings.from_env({"AGENT_CODEC_COMPRESS_OVER": "4096"})).over_bytes == 4096  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="AGENT_CODEC_COMPRESS_OVER"):
        CodecSettings.from_env({"AGENT_CODEC_COMPRESS_OVER": "-1"})


async def test_the_data_converter_reads_back_what_it_compressed():
    converter = data_converter(codec_for(CodecSettings()))
    text = LOG.decode()
    (payload,) = await converter.encode([text])
    assert payload.metadata["encoding"] == ENCODING
    assert await converter.decode([payload], [str]) == [text]


def test_the_codec_server_decodes_compressed_payloads_without_keys():
    codec = codec_for(CodecSettings())
    assert codec is not None
    server = make_server(codec, "tok", port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        stored = CompressionCodec(1024).compress(_payload(LOG))
        body = {"payloads": [json_format.MessageToDict(stored)]}
        url = f"http://127.0.0.1:{server.server_address[1]}/tok/decode"
        decoded = httpx.post(url, json=body).json()["payloads"][0]
        assert json_format.ParseDict(decoded, Payload()) == _payload(LOG)
    finally:
        server.shutdown()
        server.server_close()
