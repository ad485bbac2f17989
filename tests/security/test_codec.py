import base64
import json
import threading
from collections.abc import Iterator

import httpx
import pytest
from google.protobuf import json_format
from pydantic import BaseModel
from temporalio.api.common.v1 import Payload

from core.settings import CodecSettings
from temporal import codec_server
from temporal.codec import (
    ENCODING,
    KEY_ID_METADATA,
    CodecError,
    EncryptionCodec,
    codec_for,
    data_converter,
    encryption_for,
    generate_key,
    main,
    parse_keys,
)
from temporal.codec_server import make_server

PLAIN = b'{"command": "echo very-private-plaintext"}'
UI = "http://127.0.0.1:8233"


def _payload(data: bytes = PLAIN) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=data)


def _codec(*ids: str) -> tuple[EncryptionCodec, dict[str, str]]:
    keys = {key_id: generate_key() for key_id in ids}
    return EncryptionCodec.from_spec(",".join(f"{k}:{v}" for k, v in keys.items())), keys


async def test_codec_round_trip_gives_back_the_original_payload():
    codec, _ = _codec("k1")
    originals = [_payload(), _payload(b"")]
    encoded = await codec.encode(originals)
    assert [p.metadata["encoding"] for p in encoded] == [ENCODING, ENCODING]
    assert [p.metadata[KEY_ID_METADATA] for p in encoded] == [b"k1", b"k1"]
    assert await codec.decode(encoded) == originals


async def test_codec_ciphertext_does_not_contain_the_plaintext():
    codec, _ = _codec("k1")
    (first,) = await codec.encode([_payload()])
    (second,) = await codec.encode([_payload()])
    assert b"very-private-plaintext" not in first.SerializeToString()
    assert b"json/plain" not in first.data
    assert first.data[:12] != second.data[:12]  # a fresh nonce each time


async def test_codec_rotation_keeps_old_payloads_readable_and_encodes_with_the_new_key():
    old_codec, old_keys = _codec("old")
    (old_payload,) = await old_codec.encode([_payload()])
    new_key = generate_key()
    rotated = encryption_for(CodecSettings.from_env({"AGENT_CODEC_KEYS": f"new:{new_key}, old:{old_keys['old']}"}))
    assert rotated is not None and rotated.key_ids == ["new", "old"]
    assert await rotated.decode([old_payload]) == [_payload()]
    (new_payload,) = await rotated.encode([_payload()])
    assert new_payload.metadata[KEY_ID_METADATA] == b"new"
    with pytest.raises(CodecError, match="'new'"):
        await old_codec.decode([new_payload])


async def test_codec_decode_with_an_unknown_key_id_is_a_clear_error():
    writer, _ = _codec("gone")
    reader, _ = _codec("k2")
    (payload,) = await writer.encode([_payload()])
    with pytest.raises(CodecError, match=r"key id 'gone'.*not in AGENT_CODEC_KEYS.*known: k2"):
        await reader.decode([payload])


async def test_codec_decode_of_a_tampered_payload_fails_authentication():
    codec, _ = _codec("k1")
    (payload,) = await codec.encode([_payload()])
    payload.data = payload.data[:-1] + bytes([payload.data[-1] ^ 1])
    with pytest.raises(CodecError, match="failed authentication"):
        await codec.decode([payload])


async def test_codec_passes_unencrypted_payloads_through_on_decode():
    codec, _ = _codec("k1")
    plain = _payload()
    assert await codec.decode([plain]) == [plain]


def test_encryption_is_off_unless_keys_are_set():
    assert encryption_for(CodecSettings()) is None
    assert encryption_for(CodecSettings.from_env({"AGENT_CODEC_KEYS": "  "})) is None
    assert codec_for(CodecSettings(compress_over=0)) is None


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nokey", "expected id:base64key"),
        (":" + base64.b64encode(bytes(32)).decode(), "without an id"),
        ("k:not base64!", "not valid base64"),
        ("k:" + base64.b64encode(bytes(16)).decode(), "16 bytes"),
        ("k:{0},k:{0}".format(base64.b64encode(bytes(32)).decode()), "listed twice"),
    ],
)
def test_codec_refuses_bad_key_specs(spec: str, message: str):
    with pytest.raises(CodecError, match=message):
        EncryptionCodec(parse_keys(spec))


class Args(BaseModel):
    command: str


async def test_data_converter_encrypts_pydantic_values_and_reads_them_back():
    codec, _ = _codec("k1")
    converter = data_converter(codec)
    (payload,) = await converter.encode([Args(command="echo very-private-plaintext")])
    assert payload.metadata["encoding"] == ENCODING
    assert b"very-private-plaintext" not in payload.data
    assert await converter.decode([payload], [Args]) == [Args(command="echo very-private-plaintext")]
    assert data_converter(None).payload_codec is None


def test_genkey_prints_an_id_and_a_usable_key(capsys):
    assert main(["genkey", "--id", "k9"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("k9:")
    assert [k for k, _ in parse_keys(line)] == ["k9"]


# --- codec server -------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[tuple[str, EncryptionCodec]]:
    codec, _ = _codec("k1")
    srv = make_server(codec, "s3cret-token", host="127.0.0.1", port=0, origins=[UI])
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", codec
    finally:
        srv.shutdown()
        srv.server_close()


def _body(*payloads: Payload) -> dict:
    return {"payloads": [json_format.MessageToDict(p) for p in payloads]}


def _payloads(body: dict) -> list[Payload]:
    return [json_format.ParseDict(p, Payload()) for p in body["payloads"]]


_http = httpx.Client(trust_env=False)  # never through a proxy from the environment
AUTH = {"Authorization": "Bearer s3cret-token", "X-Namespace": "default", "Origin": UI}


async def test_codec_server_encodes_and_decodes_over_http_with_the_token(server):
    url, codec = server
    encoded = _http.post(f"{url}/encode", json=_body(_payload()), headers=AUTH)
    assert encoded.status_code == 200
    assert encoded.headers["Access-Control-Allow-Origin"] == UI
    (enc,) = _payloads(encoded.json())
    assert enc.metadata["encoding"] == ENCODING
    assert await codec.decode([enc]) == [_payload()]
    decoded = _http.post(f"{url}/default/decode", json=_body(enc, _payload(b"plain")), headers=AUTH)
    assert decoded.status_code == 200
    assert _payloads(decoded.json()) == [_payload(), _payload(b"plain")]


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}])
def test_codec_server_refuses_requests_without_the_right_token(server, headers):
    url, _ = server
    response = _http.post(f"{url}/decode", json=_body(_payload()), headers=headers)
    assert response.status_code == 401
    assert "payloads" not in response.json()


def test_codec_server_answers_a_cors_preflight_for_the_ui_origin(server):
    url, _ = server
    response = _http.options(
        f"{url}/decode",
        headers={"Origin": UI, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type,x-namespace"},
    )
    assert response.status_code in (200, 204)
    assert response.headers["Access-Control-Allow-Origin"] == UI
    assert "POST" in response.headers["Access-Control-Allow-Methods"]
    assert response.headers["Access-Control-Allow-Headers"] == "Content-Type, Authorization, X-Namespace"


def test_codec_server_gives_no_cors_headers_to_other_origins(server):
    url, _ = server
    response = _http.options(f"{url}/decode", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in response.headers


def test_codec_server_reports_an_unknown_key_id_as_a_bad_request(server):
    url, _ = server
    other, _ = _codec("elsewhere")
    foreign = other.encrypt(_payload())
    response = _http.post(f"{url}/decode", json=_body(foreign), headers=AUTH)
    assert response.status_code == 400 and "elsewhere" in response.json()["message"]


def test_codec_server_refuses_to_start_without_a_token():
    codec, _ = _codec("k1")
    with pytest.raises(ValueError, match="token"):
        make_server(codec, "", port=0)


def test_the_codec_server_refuses_to_run_without_a_token_or_keys(capsys):
    with pytest.raises(SystemExit):
        codec_server.main([], CodecSettings(keys=f"k1:{generate_key()}"))
    assert "AGENT_CODEC_TOKEN" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        codec_server.main([], CodecSettings(token="t", compress_over=0))
    assert "AGENT_CODEC_KEYS" in capsys.readouterr().err


def _sealed(codec: EncryptionCodec, data: bytes) -> Payload:
    """A payload marked encrypted with ``codec``'s key whose sealed text is ``data``."""
    return Payload(metadata={"encoding": ENCODING, KEY_ID_METADATA: codec.key_id.encode()}, data=data)


def _seal_raw(codec: EncryptionCodec, plain: bytes) -> bytes:
    nonce = b"\x01" * 12
    return nonce + codec._ciphers[codec.key_id].encrypt(nonce, plain, None)


@pytest.mark.parametrize("make_body, says", [
    (lambda codec: b"\xff\xfe{", "invalid payloads"),  # not UTF-8
    (lambda codec: json.dumps(_body(_sealed(codec, b"\x00"))).encode(), "shorter than its nonce"),
    (lambda codec: json.dumps(_body(_sealed(codec, codec.encrypt(_payload()).data[:12] + b"x" * 20))).encode(),
     "failed authentication"),
    (lambda codec: json.dumps(_body(_sealed(codec, _seal_raw(codec, b"\xff\xff not a payload")))).encode(),
     "does not hold a payload"),
])  # fmt: skip
def test_codec_server_answers_a_malformed_body_400_with_the_reason(server, make_body, says):
    """Before issue 41 the first, second and fourth dropped the connection (a traceback in the server)."""
    url, codec = server
    response = _http.post(f"{url}/decode", content=make_body(codec), headers=AUTH)
    assert response.status_code == 400 and says in response.json()["message"]

