"""``memory`` search by meaning: vectors from an OpenAI-compatible embeddings endpoint.

``POST {AGENT_EMBEDDINGS_URL}/embeddings`` with ``{"model": ..., "input": [...]}`` and the key
as a bearer token; each answer's ``data[i].embedding`` goes back in the order of its ``index``.
OpenAI, vLLM, Ollama (``/v1``) and llama.cpp's server (``--embeddings``) serve it. Every failure
(nothing listening, a refused key, an error status, an answer of another shape) is one
``EmbeddingsError`` whose message says what happened in a few words: the search then ranks by
full text alone and says so. Nothing here retries. The endpoint is the operator's, like the
model provider's, so it is not checked against a task's network policy.

``nearest`` ranks the index's lines (tools/memory_index.py) by cosine to the query; the vectors
are kept in the index by model and digest of the line's text, so each text is sent once.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import ssl
from collections.abc import Sequence

import httpx
import numpy
from pydantic import BaseModel, ValidationError

from core.cache import BoundedCache
from core.settings import MemorySettings

BATCH = 128  # inputs per request: under every server's limit (OpenAI's is 2048)
MAX_INPUT_CHARS = 2000  # a line longer than this is embedded by its start (models take 512+ tokens)
TIMEOUT_S = 20.0
CONNECT_TIMEOUT_S = 3.0
RANKED = 50  # lines each ranking brings to the merge
LOOKUPS = 500  # more vectors missing from this process than this: one scan of the index's


class EmbeddingsError(Exception):
    """The endpoint gave no usable vectors; the message is one short clause for the model."""


class _Item(BaseModel):
    embedding: list[float]
    index: int


class _Answer(BaseModel):
    data: list[_Item]


async def embed(texts: Sequence[str], settings: MemorySettings,
                client: httpx.AsyncClient | None = None) -> list[list[float]]:
    """One vector per text, in order (EmbeddingsError when the endpoint gives none)."""
    if not settings.embeddings_url or not settings.embeddings_model:
        raise EmbeddingsError("no embeddings endpoint is configured")
    if client is None:
        timeout = httpx.Timeout(TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
        async with httpx.AsyncClient(timeout=timeout, verify=_tls(), follow_redirects=False) as fresh:
            return await embed(texts, settings, fresh)
    vectors: list[list[float]] = []
    for start in range(0, len(texts), BATCH):
        vectors += await _batch([t[:MAX_INPUT_CHARS] for t in texts[start:start + BATCH]], settings, client)
    return vectors


async def _batch(texts: list[str], settings: MemorySettings, client: httpx.AsyncClient) -> list[list[float]]:
    url = f"{(settings.embeddings_url or '').rstrip('/')}/embeddings"
    headers = {"Authorization": f"Bearer {settings.embeddings_api_key}"} if settings.embeddings_api_key else {}
    try:
        response = await client.post(url, json={"model": settings.embeddings_model, "input": texts}, headers=headers)
    except httpx.TimeoutException:
        raise EmbeddingsError(f"the embeddings endpoint did not answer within {TIMEOUT_S:.0f} s") from None
    except httpx.TransportError as exc:
        raise EmbeddingsError(f"the embeddings endpoint could not be reached ({type(exc).__name__})") from None
    if response.status_code >= 400:
        reason = _reason(response)
        if settings.embeddings_api_key:  # some servers quote the key they refused
            reason = reason.replace(settings.embeddings_api_key, "***")
        raise EmbeddingsError(f"the embeddings endpoint answered HTTP {response.status_code}{reason}")
    try:
        items = _Answer.model_validate_json(response.content).data
    except ValidationError:
        raise EmbeddingsError("the embeddings endpoint's answer has no data[].embedding") from None
    by_index = {item.index: item.embedding for item in items}
    if sorted(by_index) != list(range(len(texts))):
        raise EmbeddingsError(f"the embeddings endpoint sent {len(items)} vectors for {len(texts)} inputs")
    vectors = [by_index[i] for i in range(len(texts))]
    if not vectors[0] or any(len(v) != len(vectors[0]) for v in vectors):
        raise EmbeddingsError("the embeddings endpoint sent vectors of different lengths")
    return vectors


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every search's client: loading the CA bundle costs more than a search."""
    return httpx.create_ssl_context()


def _reason(response: httpx.Response) -> str:
    """``: message`` from an OpenAI-style error body (``{"error": {"message": ...}}`` or a string), else nothing."""
    try:
        body = response.json()
    except ValueError:
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return f": {' '.join(str(message).split())[:200]}" if message else ""


# Vectors by (model, digest of the text), as the index keeps them: content-addressed, so never stale;
# a warm search then reads only the lines from SQLite. On the event loop only.
_VECTORS: BoundedCache[tuple[str, str], bytes] = BoundedCache(20_000)


async def nearest(db: sqlite3.Connection, query: str, settings: MemorySettings) -> list[int]:
    """Ids of the lines nearest ``query`` in meaning, best first; vectors in neither this process
    nor the index are asked for first, once per distinct text."""
    model = settings.embeddings_model or ""
    rows = await asyncio.to_thread(lambda: db.execute("SELECT id, digest, text FROM lines").fetchall())
    blobs = {digest: blob for _, digest, _ in rows if (blob := _VECTORS.get((model, digest))) is not None}
    need = list({digest for _, digest, _ in rows} - blobs.keys())
    if need:
        blobs.update(await asyncio.to_thread(_stored, db, model, need))
    missing = {digest: text for _, digest, text in reversed(rows) if digest not in blobs}
    vectors = await embed([*missing.values(), query], settings)
    wanted = _unit(vectors.pop())
    fresh = [(model, digest, _unit(v).tobytes()) for digest, v in zip(missing, vectors, strict=True)]
    blobs.update((digest, blob) for _, digest, blob in fresh)
    for _, digest, _ in rows:
        _VECTORS.put((model, digest), blobs[digest])

    def rank() -> list[int]:
        if fresh:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", fresh)
            db.execute("COMMIT")
        known = [(row, blobs[digest]) for row, digest, _ in rows if len(blobs[digest]) == wanted.nbytes]
        if not known:  # (a vector of another length is another model's: skipped)
            return []
        ids = numpy.fromiter((row for row, _ in known), dtype=numpy.int64, count=len(known))
        matrix = numpy.frombuffer(b"".join(blob for _, blob in known), dtype=numpy.float32).reshape(len(known), -1)
        # Cosines, as every vector is kept of length 1; einsum, not BLAS, whose threads cost more here.
        scores = numpy.einsum("ij,j->i", matrix, wanted)
        return [int(i) for i in ids[numpy.argsort(-scores, kind="stable")[:RANKED]]]

    return await asyncio.to_thread(rank)


def _stored(db: sqlite3.Connection, model: str, digests: list[str]) -> list[tuple[str, bytes]]:
    """The index's vectors of these texts: looked up when they are few, else one scan (faster then)."""
    if len(digests) > LOOKUPS:
        return db.execute("SELECT digest, vector FROM vectors WHERE model = ?", (model,)).fetchall()
    marks = ",".join("?" * len(digests))
    return db.execute(f"SELECT digest, vector FROM vectors WHERE model = ? AND digest IN ({marks})",
                      (model, *digests)).fetchall()


def _unit(vector: list[float]) -> numpy.ndarray:
    array = numpy.asarray(vector, dtype=numpy.float32)
    norm = float(numpy.linalg.norm(array))
    return array / norm if norm else array
