"""The context window a local model server says it has, for a model the tables do not know.

The unknown-model default (32K) is often far more than a llama.cpp, vLLM or Ollama server
was started with, so each endpoint and model is asked once (cached for the worker's life):
llama.cpp's ``/props``, vLLM's ``/models``, Ollama's ``/api/show``. A server that answers
none of them gives None, and the window is learned from its first overflow error
(``providers/errors.stated_context_window``). The requests: docs/providers.md.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

PROBE_TIMEOUT_S = 5.0


def _root(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _llama_cpp(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    nested = settings.get("n_ctx") if isinstance(settings, dict) else None
    return _positive(nested) or _positive(body.get("n_ctx"))


def _vllm(body: Any, model: str) -> int | None:
    data = body.get("data") if isinstance(body, dict) else None
    for row in data if isinstance(data, list) else []:
        if isinstance(row, dict) and row.get("id") == model:
            return _positive(row.get("max_model_len"))
    return None


def _ollama(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    for line in str(body.get("parameters") or "").splitlines():  # "num_ctx    8192"
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            return _positive(int(value.strip()))
    info = body.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if key.endswith(".context_length"):
                return _positive(value)
    return None


async def _json(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> Any:
    try:
        response = await client.request(method, url, timeout=PROBE_TIMEOUT_S, **kwargs)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


async def server_window(base_url: str, model: str, headers: dict[str, str] | None = None,
                        client: httpx.AsyncClient | None = None) -> int | None:
    """The window (tokens) the server at ``base_url`` serves ``model`` with, if it says."""
    own = client is None
    http = client or httpx.AsyncClient(headers=headers)
    try:
        root = _root(base_url)
        found = _llama_cpp(await _json(http, "GET", f"{root}/props"))
        if found is None:
            found = _vllm(await _json(http, "GET", f"{base_url.rstrip('/')}/models"), model)
        if found is None:
            found = _ollama(await _json(http, "POST", f"{root}/api/show", json={"model": model}))
        return found
    finally:
        if own:
            await http.aclose()


class WindowCache:
    """Each endpoint's answer for each model, asked once (None answers are kept too)."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], int | None] = {}

    async def get(self, base_url: str, model: str, headers: dict[str, str] | None = None) -> int | None:
        key = (base_url, model)
        if key not in self._known:
            self._known[key] = await server_window(base_url, model, headers)
        return self._known[key]
