"""A codec server, so the Temporal UI and CLI can show compressed and encrypted payloads as plaintext.

It speaks Temporal's remote codec protocol: ``POST .../encode`` and
``POST .../decode`` with a JSON body ``{"payloads": [...]}`` (payloads in
protobuf JSON form), answered in the same shape. Every POST must carry
``Authorization: Bearer <AGENT_CODEC_TOKEN>``, else 401; CORS preflights
(``OPTIONS``) are answered without it, as browsers send none. CORS headers
name the allowed UI origins only.

    AGENT_CODEC_KEYS=... AGENT_CODEC_TOKEN=... python -m temporal.codec_server --port 8081
    temporal workflow show -w ID --codec-endpoint http://127.0.0.1:8081 \\
        --codec-auth "Bearer $AGENT_CODEC_TOKEN"

For the Temporal UI, set its codec endpoint (Settings, or ``temporal server start-dev
--ui-codec-endpoint``) to ``http://127.0.0.1:8081/<AGENT_CODEC_TOKEN>``: the UI cannot send
a bearer header, so the token may also be the first path segment.

It listens on 127.0.0.1 unless told otherwise: whoever can reach it with the
token can decrypt every payload.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import sys
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.converter import PayloadCodec

from core.settings import CodecSettings
from runtime.settings import load_settings
from temporal.codec import CodecError, codec_for
from temporal.compression import CompressionError
from temporal.server import EMBEDDED_HOST, EMBEDDED_UI_PORT

TOKEN_ENV = "AGENT_CODEC_TOKEN"
ORIGINS_ENV = "AGENT_CODEC_CORS_ORIGINS"
DEFAULT_PORT = 8081
DEFAULT_ORIGINS = (f"http://{EMBEDDED_HOST}:{EMBEDDED_UI_PORT}", f"http://localhost:{EMBEDDED_UI_PORT}")
MAX_BODY_BYTES = 64 * 1024 * 1024
ALLOW_HEADERS = "Content-Type, Authorization, X-Namespace"


def make_server(
    codec: PayloadCodec,
    token: str,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    origins: Sequence[str] = DEFAULT_ORIGINS,
) -> ThreadingHTTPServer:
    """A server ready for ``serve_forever()``; port 0 picks a free port (see ``server_address``)."""
    if not token:
        raise ValueError(f"a token is required ({TOKEN_ENV})")
    expected = f"Bearer {token}".encode()
    allowed = frozenset(o.rstrip("/") for o in origins)

    class Handler(BaseHTTPRequestHandler):
        server_version = "agent-codec"

        def do_OPTIONS(self) -> None:
            self._respond(204)

        def do_POST(self) -> None:
            action = self.path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
            if action not in ("encode", "decode"):
                return self._respond(404, {"message": "POST /encode or /decode"})
            given = self.headers.get("Authorization", "").encode()
            # The Temporal UI cannot send our bearer token, but its codec endpoint setting can
            # carry it as the first path segment: http://127.0.0.1:8081/<token>
            segments = self.path.split("?", 1)[0].strip("/").split("/")
            in_path = f"Bearer {segments[0]}".encode() if len(segments) > 1 else b""
            if not (hmac.compare_digest(given, expected) or hmac.compare_digest(in_path, expected)):
                return self._respond(401, {"message": "missing or wrong bearer token"})
            length = self.headers.get("Content-Length", "0")
            if not length.isdigit():
                return self._respond(400, {"message": "a Content-Length is required"})
            if int(length) > MAX_BODY_BYTES:
                return self._respond(413, {"message": f"body over {MAX_BODY_BYTES} bytes"})
            try:
                payloads = json_format.Parse(self.rfile.read(int(length)) or b"{}", Payloads())
            except (json_format.ParseError, ValueError) as exc:  # not JSON, not UTF-8, not payloads
                return self._respond(400, {"message": f"invalid payloads: {exc}"})
            run = codec.encode if action == "encode" else codec.decode
            try:
                result = asyncio.run(run(payloads.payloads))
            except (CodecError, CompressionError) as exc:
                return self._respond(400, {"message": str(exc)})
            self._respond(200, {"payloads": [json_format.MessageToDict(p) for p in result]})

        def _respond(self, status: int, body: Mapping[str, object] | None = None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            origin = (self.headers.get("Origin") or "").rstrip("/")
            if origin in allowed:
                self.send_header("Access-Control-Allow-Origin", origin)
                self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
                self.send_header("Access-Control-Allow-Headers", ALLOW_HEADERS)
                self.send_header("Access-Control-Allow-Credentials", "true")
                self.send_header("Access-Control-Max-Age", "600")
                self.send_header("Vary", "Origin")
            if data:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            sys.stderr.write(f"codec-server {self.address_string()} {format % args}\n")

    return ThreadingHTTPServer((host, port), Handler)


def main(argv: Sequence[str] | None = None, settings: CodecSettings | None = None) -> int:
    """``python -m temporal.codec_server``, an entry point: it reads this process's settings
    once (``settings``: given instead, by a test)."""
    parser = argparse.ArgumentParser(prog="python -m temporal.codec_server", description=(__doc__ or "").split("\n")[0])
    try:
        settings = load_settings().codec if settings is None else settings
    except ValueError as exc:
        parser.error(str(exc))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument(
        "--origins",
        default=",".join(settings.cors_origins or DEFAULT_ORIGINS),
        help=f"comma-separated UI origins allowed by CORS (env {ORIGINS_ENV})",
    )
    parser.add_argument("--token-file", type=Path, help=f"read the token from this file (instead of {TOKEN_ENV})")
    args = parser.parse_args(argv)
    token = args.token_file.read_text().strip() if args.token_file else settings.token
    if not token:
        parser.error(f"set {TOKEN_ENV}: the codec server refuses to run without a token")
    try:
        codec = codec_for(settings)
    except CodecError as exc:
        parser.error(str(exc))
    if codec is None:
        parser.error("set AGENT_CODEC_KEYS or AGENT_CODEC_COMPRESS_OVER above 0: there is nothing to decode")
    origins = [o.strip() for o in args.origins.split(",") if o.strip()]
    server = make_server(codec, token, host=args.host, port=args.port, origins=origins)
    print(f"codec server on http://{args.host}:{server.server_address[1]}", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
