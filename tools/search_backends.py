"""The search tool's backends: Tavily, Brave and a self-hosted SearXNG, behind one interface.

A backend has ``async search(query, max_results, *, topic) -> list[SearchHit]`` and raises
``SearchError`` (phrased for the model, marked retryable or not) for every failure it knows;
``from_settings`` builds it from ``Settings.search``. Tavily: ``POST {TAVILY_BASE_URL}/search``
with ``TAVILY_API_KEY``. Brave: ``GET {BRAVE_BASE_URL}/res/v1/web/search?q=...&count=...`` with
``BRAVE_API_KEY`` in ``X-Subscription-Token``. SearXNG: ``GET {SEARXNG_URL}/search?format=json``.

They never retry: a 429, a 5xx or a timeout becomes a retryable ``SearchError`` that says the
search may be tried again later, and the model decides. They stand apart from the tool
(``tools.search``, which picks one) because each speaks its own service's wire and errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from core.settings import SearchSettings
from tools.web import new_client

Topic = Literal["general", "news"]
_M = TypeVar("_M", bound=BaseModel)

SEARCH_TIMEOUT_S = 20.0
CONNECT_TIMEOUT_S = 10.0
TAVILY_URL = "https://api.tavily.com"
BRAVE_URL = "https://api.search.brave.com"


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str
    published: str | None = None
    score: float | None = None


class SearchError(Exception):
    """A search that failed, phrased for the model; ``retryable`` if trying later may help."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class SearchBackend(Protocol):
    async def search(self, query: str, max_results: int, *, topic: Topic) -> list[SearchHit]: ...


# --- Tavily -----------------------------------------------------------------

class _TavilyResult(BaseModel):
    title: str = ""
    url: str = ""
    content: str = ""
    score: float | None = None
    published_date: str | None = None


class _TavilyResponse(BaseModel):
    results: list[_TavilyResult] = []


class _KeyedBackend:
    """A search API reached with an API key at a base URL."""

    DEFAULT_URL = ""

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        client: httpx.AsyncClient | None = None,
        *,
        timeout_s: float = SEARCH_TIMEOUT_S,
    ) -> None:
        self.api_key = api_key
        self.base_url = (base_url or self.DEFAULT_URL).rstrip("/")
        self.client = client
        self.timeout_s = timeout_s


def _api_key(key: str | None, variable: str, what: str) -> str:
    if not key:
        raise SearchError(
            f"Web search is not configured: set {variable} to {what} in the worker's environment, then try again."
        )
    return key


class TavilyBackend(_KeyedBackend):
    """Tavily's search API: ``POST {base_url}/search`` with a bearer key."""

    DEFAULT_URL = TAVILY_URL

    @classmethod
    def from_settings(cls, settings: SearchSettings) -> TavilyBackend:
        key = _api_key(settings.tavily_api_key, "TAVILY_API_KEY", "a Tavily API key (https://tavily.com)")
        return cls(key, settings.tavily_base_url or TAVILY_URL)

    async def search(self, query: str, max_results: int, *, topic: Topic) -> list[SearchHit]:
        body = {
            "query": query,
            "max_results": max_results,
            "topic": topic,
            "search_depth": "basic",
            "include_answer": False,
        }
        headers = {"Authorization": f"Bearer {self.api_key}"}
        url = f"{self.base_url}/search"
        response = await _send(self.client, self.timeout_s, "POST", url, json=body, headers=headers)
        raise_for_status(response, key_variable="TAVILY_API_KEY")
        parsed = _parse(_TavilyResponse, response)
        return [
            SearchHit(r.title, r.url, r.content, published=r.published_date, score=r.score)
            for r in parsed.results
            if r.url
        ]


# --- Brave --------------------------------------------------------------------

class _BraveResult(BaseModel):
    title: str = ""
    url: str = ""
    description: str = ""
    age: str | None = None


class _BraveWeb(BaseModel):
    results: list[_BraveResult] = []


class _BraveResponse(BaseModel):
    web: _BraveWeb = _BraveWeb()  # absent when nothing was found


class BraveBackend(_KeyedBackend):
    """Brave's Search API: ``GET {base_url}/res/v1/web/search`` with a subscription token."""

    DEFAULT_URL = BRAVE_URL

    @classmethod
    def from_settings(cls, settings: SearchSettings) -> BraveBackend:
        key = _api_key(settings.brave_api_key, "BRAVE_API_KEY", "a Brave Search API key (https://brave.com/search/api)")
        return cls(key, settings.brave_base_url or BRAVE_URL)

    async def search(self, query: str, max_results: int, *, topic: Topic) -> list[SearchHit]:
        headers = {"X-Subscription-Token": self.api_key, "Accept": "application/json"}
        url = f"{self.base_url}/res/v1/web/search"
        params = {"q": query, "count": max_results}
        response = await _send(self.client, self.timeout_s, "GET", url, params=params, headers=headers)
        raise_for_status(response, key_variable="BRAVE_API_KEY")
        parsed = _parse(_BraveResponse, response)
        return [
            SearchHit(r.title, r.url, _unhighlight(r.description), published=r.age)
            for r in parsed.web.results
            if r.url
        ]


def _unhighlight(text: str) -> str:
    """Brave marks the query's words in descriptions with ``<strong>``; the model needs plain text."""
    return re.sub(r"</?strong>", "", text)


# --- SearXNG ------------------------------------------------------------------

class _SearxngResult(BaseModel):
    title: str = ""
    url: str = ""
    content: str = ""
    score: float | None = None
    publishedDate: str | None = None  # noqa: N815 (SearXNG's name)


class _SearxngResponse(BaseModel):
    results: list[_SearxngResult] = []


class SearxngBackend:
    """A self-hosted SearXNG: ``GET {base_url}/search?format=json``, no key."""

    def __init__(
        self,
        base_url: str,
        client: httpx.AsyncClient | None = None,
        *,
        timeout_s: float = SEARCH_TIMEOUT_S,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.timeout_s = timeout_s

    @classmethod
    def from_settings(cls, settings: SearchSettings) -> SearxngBackend:
        url = settings.searxng_url
        if not url:
            raise SearchError(
                "Web search is not configured: set SEARXNG_URL to the address of a SearXNG "
                "instance (such as http://127.0.0.1:8888) in the worker's environment, "
                "then try again."
            )
        return cls(url)

    async def search(self, query: str, max_results: int, *, topic: Topic) -> list[SearchHit]:
        params = {"q": query, "format": "json"}
        if topic == "news":
            params["categories"] = "news"
        response = await _send(self.client, self.timeout_s, "GET", f"{self.base_url}/search", params=params)
        if response.status_code == 403:
            raise SearchError(
                "The SearXNG instance refused format=json (HTTP 403): its JSON API is off. "
                "Add json to search.formats in the instance's settings.yml "
                "(formats: [html, json]) and restart it."
            )
        raise_for_status(response, key_variable="SEARXNG_URL")
        parsed = _parse(_SearxngResponse, response)
        return [
            SearchHit(r.title, r.url, r.content, published=r.publishedDate, score=r.score)
            for r in parsed.results
            if r.url
        ][:max_results]


# --- HTTP, shared -------------------------------------------------------------

async def _send(
    client: httpx.AsyncClient | None, timeout_s: float, method: str, url: str, **kwargs: Any
) -> httpx.Response:
    """One request, on ``client`` or a fresh one; transport failures as retryable SearchErrors."""
    try:
        if client is not None:
            return await client.request(method, url, **kwargs)
        async with new_client(timeout_s=timeout_s, connect_timeout_s=CONNECT_TIMEOUT_S) as fresh:
            return await fresh.request(method, url, **kwargs)
    except httpx.TimeoutException:
        raise SearchError(
            "The search service did not answer in time; the search may be retried later.",
            retryable=True,
        ) from None
    except httpx.TransportError as exc:
        raise SearchError(
            f"Could not reach the search service ({type(exc).__name__}); "
            "the search may be retried later.",
            retryable=True,
        ) from None


def _parse(model: type[_M], response: httpx.Response) -> _M:
    try:
        return model.model_validate_json(response.content)
    except ValidationError:
        raise SearchError("The search service sent a response that could not be read.") from None


def raise_for_status(response: httpx.Response, *, key_variable: str) -> None:
    """SearchError for a 4xx or 5xx: a refused key, a retryable failure, or a bad request."""
    status = response.status_code
    if status < 400:
        return
    why = f"HTTP {status}{_detail(response)}"
    if status in (401, 403):
        raise SearchError(f"The search service refused the API key ({why}): check {key_variable}.")
    if status in (408, 429) or status >= 500:
        busy = "is rate limiting" if status == 429 else "failed"
        raise SearchError(
            f"The search service {busy} ({why}); the search may be retried later.",
            retryable=True,
        )
    raise SearchError(f"The search service rejected the request ({why}).")


def _detail(response: httpx.Response) -> str:
    """A short reason from a JSON error body: Tavily's ``{"detail": {"error": "..."}}``,
    Brave's ``{"type": "ErrorResponse", "error": {"code": ..., "detail": "..."}}`` and kin."""
    try:
        body = response.json()
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    detail = body.get("detail") or body.get("error") or body.get("message")
    if isinstance(detail, dict):
        detail = detail.get("error") or detail.get("message") or detail.get("detail")
    return f": {clip(str(detail), 200)}" if detail else ""


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in "…" when it was longer."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
