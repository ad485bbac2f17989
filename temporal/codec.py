"""Payload encryption: AES-256-GCM over every payload Temporal stores (after compression).

Off by default. With ``AGENT_CODEC_KEYS="id1:base64key,id2:base64key"`` set,
the client and worker encrypt every payload (workflow inputs, activity
arguments and results, messages, tool output) before it reaches the Temporal
server, so history and UI show ciphertext. The UI can show plaintext again
through the codec server (``temporal/codec_server.py``).

An encrypted payload has metadata ``encoding: binary/encrypted`` and
``encryption-key-id: <id>``; its data is a 12-byte nonce followed by the
AES-GCM ciphertext (with tag) of the original ``Payload`` serialized.

Keys: the first key encrypts, every key decrypts. To rotate, put a new key
first and keep the old ones for as long as histories encrypted with them
live. Payloads without the encrypted encoding pass through decoding, so
turning encryption on for existing workflows works. A key is 32 random bytes,
base64: ``python -m temporal.codec genkey``.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import dataclasses
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, PayloadCodec

from core.settings import CodecSettings
from temporal.compression import ChainCodec, CompressionCodec

KEYS_ENV = "AGENT_CODEC_KEYS"
ENCODING = b"binary/encrypted"
KEY_ID_METADATA = "encryption-key-id"
NONCE_BYTES = 12
KEY_BYTES = 32


class CodecError(ValueError):
    """Bad key configuration, or a payload that cannot be decrypted."""


def parse_keys(spec: str) -> list[tuple[str, bytes]]:
    """``"id1:base64key,id2:base64key"`` as ``[(id, key), ...]`` in order."""
    keys: list[tuple[str, bytes]] = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        key_id, sep, encoded = item.partition(":")
        key_id = key_id.strip()
        if not sep or not key_id:
            raise CodecError(f"{KEYS_ENV}: expected id:base64key, got an entry without an id")
        try:
            key = base64.b64decode(encoded.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise CodecError(f"{KEYS_ENV}: key {key_id!r} is not valid base64") from None
        if len(key) != KEY_BYTES:
            raise CodecError(f"{KEYS_ENV}: key {key_id!r} is {len(key)} bytes; AES-256 needs {KEY_BYTES}")
        keys.append((key_id, key))
    if not keys:
        raise CodecError(f"{KEYS_ENV} holds no keys")
    return keys


class EncryptionCodec(PayloadCodec):
    def __init__(self, keys: Sequence[tuple[str, bytes]]) -> None:
        if not keys:
            raise CodecError("at least one key is needed")
        self._ciphers: dict[str, AESGCM] = {}
        for key_id, key in keys:
            if key_id in self._ciphers:
                raise CodecError(f"key id {key_id!r} is listed twice")
            if len(key) != KEY_BYTES:
                raise CodecError(f"key {key_id!r} is {len(key)} bytes; AES-256 needs {KEY_BYTES}")
            self._ciphers[key_id] = AESGCM(key)
        self.key_id = keys[0][0]

    @classmethod
    def from_spec(cls, spec: str) -> EncryptionCodec:
        return cls(parse_keys(spec))

    @property
    def key_ids(self) -> list[str]:
        return list(self._ciphers)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encrypt(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decrypt(p) for p in payloads]

    def encrypt(self, payload: Payload) -> Payload:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._ciphers[self.key_id].encrypt(nonce, payload.SerializeToString(), None)
        return Payload(
            metadata={"encoding": ENCODING, KEY_ID_METADATA: self.key_id.encode()},
            data=nonce + sealed,
        )

    def decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload  # written before encryption was turned on
        key_id = payload.metadata.get(KEY_ID_METADATA, b"").decode(errors="replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise CodecError(
                f"payload was encrypted with key id {key_id!r}, which is not in {KEYS_ENV} "
                f"(known: {', '.join(self._ciphers)}); keep old keys listed after the new one"
            )
        nonce, sealed = payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:]
        if len(nonce) < NONCE_BYTES:
            raise CodecError(f"payload marked encrypted with key id {key_id!r} is {len(payload.data)} bytes, "
                             "shorter than its nonce")
        try:
            plain = cipher.decrypt(nonce, sealed, None)
        except InvalidTag:
            raise CodecError(f"payload encrypted with key id {key_id!r} failed authentication") from None
        try:
            return Payload.FromString(plain)
        except DecodeError:  # sealed with our key, but not a payload: someone else's data
            raise CodecError(f"payload encrypted with key id {key_id!r} does not hold a payload") from None


def encryption_for(settings: CodecSettings) -> EncryptionCodec | None:
    """The encryption ``AGENT_CODEC_KEYS`` configures, or None when it is unset."""
    return EncryptionCodec.from_spec(settings.keys) if settings.keys else None


def codec_for(settings: CodecSettings) -> PayloadCodec | None:
    """What the client and worker apply to every payload: compression over the threshold
    (``temporal/compression.py``), then encryption when keys are set; None when neither is."""
    codecs: list[PayloadCodec] = []
    if settings.compress_over:
        codecs.append(CompressionCodec(settings.compress_over))
    if (encryption := encryption_for(settings)) is not None:
        codecs.append(encryption)
    return codecs[0] if len(codecs) == 1 else ChainCodec(codecs) if codecs else None


def data_converter(codec: PayloadCodec | None) -> DataConverter:
    """The project's pydantic data converter, encrypting with ``codec`` when given."""
    if codec is None:
        return pydantic_data_converter
    return dataclasses.replace(pydantic_data_converter, payload_codec=codec)


def generate_key() -> str:
    """A new random AES-256 key, base64."""
    return base64.b64encode(os.urandom(KEY_BYTES)).decode()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m temporal.codec", description=(__doc__ or "").split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("genkey", help="print a new key as id:base64key")
    gen.add_argument("--id", default=None, help="key id (default: k<UTC date and time>)")
    args = parser.parse_args(argv)
    if args.command == "genkey":
        key_id = args.id or datetime.now(UTC).strftime("k%Y%m%d%H%M%S")
        if not key_id or any(c in key_id for c in ":,"):
            parser.error("a key id must be non-empty and hold neither ':' nor ','")
        print(f"{key_id}:{generate_key()}")
        print(f"# put it first in {KEYS_ENV}, keeping old keys after it", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
