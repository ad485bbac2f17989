"""A local OpenAI-compatible embeddings server: ``POST /v1/embeddings``, deterministic vectors.

Answers ``{"model": ..., "input": str | [str, ...]}`` with
``{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}], "model": ...,
"usage": {...}}`` as OpenAI, vLLM, Ollama and llama.cpp do, and refuses what OpenAI refuses, with
its error shape: a body that is not JSON, no ``model`` or no ``input`` (400), an empty string or
more than 2048 inputs (400), a model it does not serve (404 ``model_not_found``), a missing or
wrong key when it has one (401). A vector is a hashed bag of words (``DIMENSIONS`` buckets, signs
from the hash, normalized), so texts sharing words are near; ``synonyms`` maps a word to another
before hashing, for a match full text cannot make. ``requests`` holds every body received and
``inputs`` every text embedded; ``status`` makes it answer that error to every request.

Stdlib only: a ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) in a daemon thread.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EMBEDDINGS_PATH = "/v1/embeddings"
DIMENSIONS = 256
MAX_INPUTS = 2048
_WORD = re.compile(r"\w+")


def vector(text: str, synonyms: Mapping[str, str] | None = None, dimensions: int = DIMENSIONS) -> list[float]:
    """The text's hashed bag of words, normalized (all zeros for a text without words)."""
    values = [0.0] * dimensions
    synonyms = synonyms or {}
    for found in _WORD.findall(text.casefold()):
        word = synonyms[found] if found in synonyms else found
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        values[int.from_bytes(digest[:4], "big") % dimensions] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


class EmbeddingsServer:
    def __init__(self, *, models: tuple[str, ...] = ("embed-test",), api_key: str | None = None,
                 synonyms: Mapping[str, str] | None = None, dimensions: int = DIMENSIONS) -> None:
        self.models = models
        self.api_key = api_key
        self.synonyms = dict(synonyms or {})
        self.dimensions = dimensions
        self.status: int | None = None  # answer every request with this error status
        self.requests: list[Any] = []
        self.inputs: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """The base URL, as ``AGENT_EMBEDDINGS_URL`` takes it."""
        assert self._server is not None, "start() the server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> EmbeddingsServer:
        owner = self

        class Handler(_Handler):
            server_owner = owner

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> EmbeddingsServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def answer(self, body: Any, authorization: str | None) -> tuple[int, dict[str, Any]]:
        """The status and JSON body for one request."""
        with self._lock:
            self.requests.append(body)
        if self.status is not None:
            return self.status, _error(f"scripted failure {self.status}", "server_error")
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            given = (authorization or "").removeprefix("Bearer ")  # quoted back, as OpenAI does (masked)
            return 401, _error(f"Incorrect API key provided: {given}.", "invalid_api_key")
        if not isinstance(body, dict):
            return 400, _error("We could not parse the JSON body of your request.", "invalid_request_error")
        for field in ("model", "input"):
            if field not in body:
                return 400, _error(f"you must provide a {field} parameter", "invalid_request_error")
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            return 400, _error("'$.input' is invalid: a non-empty string or array of non-empty strings",
                               "invalid_request_error")
        if len(texts) > MAX_INPUTS:
            return 400, _error(f"'$.input' is invalid: at most {MAX_INPUTS} inputs", "invalid_request_error")
        if body["model"] not in self.models:
            return 404, _error(f"The model `{body['model']}` does not exist", "model_not_found")
        with self._lock:
            self.inputs += texts
        data = [{"object": "embedding", "index": i, "embedding": vector(t, self.synonyms, self.dimensions)}
                for i, t in enumerate(texts)]
        tokens = sum(len(_WORD.findall(t)) for t in texts)
        return 200, {"object": "list", "data": data, "model": body["model"],
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def _error(message: str, code: str) -> dict[str, Any]:
    kind = "invalid_request_error" if code != "server_error" else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    server_owner: EmbeddingsServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.split("?", 1)[0] != EMBEDDINGS_PATH:
            self._send(404, _error(f"no route for POST {self.path}", "not_found"))
            return
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        self._send(*self.server_owner.answer(body, self.headers.get("Authorization")))

    def _send(self, status: int, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
