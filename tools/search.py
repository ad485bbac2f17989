"""The ``search`` tool: a web search that returns summaries and candidate URLs.

Search is step one of two: it finds pages, ``fetch_url`` reads them. The
result ends with a note saying so. The ``type`` argument makes the model say
what it is after, and shapes the query (``QUERY_SUFFIX``): "news" appends
"latest news" and asks the backend for its news topic, "research" appends
"research paper", and so on.

Backends are pluggable. A backend is any object with
``async search(query, max_results, *, topic) -> list[SearchHit]`` that raises
``SearchError`` (phrased for the model, marked retryable or not) for every
failure it knows. ``AGENT_SEARCH_BACKEND`` names one in ``BACKENDS``, each
built from ``Settings.search`` (in the call's ``ToolContext``):

- ``tavily``: ``POST {TAVILY_BASE_URL}/search`` with ``TAVILY_API_KEY``;
- ``brave``: ``GET {BRAVE_BASE_URL}/res/v1/web/search?q=...&count=...`` with
  ``BRAVE_API_KEY`` in ``X-Subscription-Token``, hits from ``web.results[]``;
- ``searxng``: ``GET {SEARXNG_URL}/search?q=...&format=json`` on a
  self-hosted instance, hits from ``results[]``.

When ``AGENT_SEARCH_BACKEND`` is unset, the first backend in ``AUTO_DETECT``
whose variable is set is used, Tavily first; with none set it is Tavily, whose
error says how to configure it.

The backends never retry: a 429, a 5xx or a timeout becomes an error result
that says the search may be tried again later, and the model decides.

A search runs only in a task started with ``--network`` (``tools.egress``):
the query is the model's words, sent to a service outside the task, and so it
is the network even when the backend is a SearXNG on loopback. The backend's
address is the operator's (like the model provider's), so it is not checked
against the deny list, and the hits it returns are only read, never fetched.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from core.heartbeat import with_heartbeats
from core.settings import SearchSettings
from core.untrusted import wrap_untrusted
from tools import web
from tools.base import Danger, Field, StrictArgs, ToolContext, ToolDefinition, ToolOutcome
from tools.egress import NO_NETWORK
from tools.web import new_client

SearchType = Literal["info", "news", "research", "api", "data", "image", "tool"]
Topic = Literal["general", "news"]
_M = TypeVar("_M", bound=BaseModel)

QUERY_SUFFIX: dict[str, str] = {
    "info": "",
    "news": "latest news",
    "research": "research paper",
    "api": "API documentation",
    "data": "dataset",
    "image": "images",
    "tool": "tool",
}
SNIPPET_CHARS = 300
SEARCH_TIMEOUT_S = 20.0
CONNECT_TIMEOUT_S = 10.0
TAVILY_URL = "https://api.tavily.com"
BRAVE_URL = "https://api.search.brave.com"
FETCH_NOTE = (
    "These are search summaries, not the pages themselves. Before relying on a result, "
    "read its source with fetch_url(url=...) to get the full text."
)

DESCRIPTION = """\
Search the web. Returns up to max_results hits, each with title, URL, a short snippet and date.
Snippets are summaries: read the pages you need with fetch_url.
type says what you are looking for and shapes the query:
info (general facts), news (recent events), research (papers), api (API documentation),
data (datasets), image (images), tool (software tools).
"""


class SearchArgs(StrictArgs):
    query: str = Field(min_length=1, description="What to search for, in plain words.")
    type: SearchType = Field("info", description="The kind of result wanted.")
    max_results: int = Field(5, ge=1, le=10, description="How many hits to return (1-10).")


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
        response = await _send(
            self.client, self.timeout_s, "POST", url, json=body, headers=headers
        )
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
        response = await _send(
            self.client,
            self.timeout_s,
            "GET",
            f"{self.base_url}/res/v1/web/search",
            params={"q": query, "count": max_results},
            headers=headers,
        )
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
        response = await _send(
            self.client, self.timeout_s, "GET", f"{self.base_url}/search", params=params
        )
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
    return f": {_clip(str(detail), 200)}" if detail else ""


# --- the tool -----------------------------------------------------------------

BACKENDS: dict[str, Callable[[SearchSettings], SearchBackend]] = {
    "tavily": TavilyBackend.from_settings,
    "brave": BraveBackend.from_settings,
    "searxng": SearxngBackend.from_settings,
}
# Without AGENT_SEARCH_BACKEND: the first backend whose setting is there, else Tavily.
AUTO_DETECT: tuple[tuple[str, Callable[[SearchSettings], str | None]], ...] = (
    ("tavily", lambda s: s.tavily_api_key),
    ("brave", lambda s: s.brave_api_key),
    ("searxng", lambda s: s.searxng_url),
)
def backend_name(settings: SearchSettings) -> str:
    """The backend ``AGENT_SEARCH_BACKEND`` names, or the one ``AUTO_DETECT`` finds."""
    if name := (settings.backend or "").lower():
        return name
    return next((name for name, setting in AUTO_DETECT if setting(settings)), "tavily")


def search_configured(settings: SearchSettings) -> bool:
    """Whether a search backend can be built (to offer the tool at all)."""
    try:
        make_backend(settings)
    except SearchError:
        return False
    return True


def make_backend(settings: SearchSettings) -> SearchBackend:
    """The backend ``AGENT_SEARCH_BACKEND`` names; SearchError if it cannot be built."""
    name = backend_name(settings)
    factory = BACKENDS.get(name)
    if factory is None:
        raise SearchError(
            f"Unknown search backend {name!r} in AGENT_SEARCH_BACKEND; "
            f"choose one of: {', '.join(BACKENDS)}."
        )
    return factory(settings)


def shape_query(query: str, search_type: SearchType) -> str:
    suffix = QUERY_SUFFIX[search_type]
    query = query.strip()
    return f"{query} {suffix}" if suffix else query


def render(query: str, search_type: SearchType, hits: list[SearchHit]) -> str:
    if not hits:
        return f'No results for "{query}" (type: {search_type}). Try other words or another type.'
    lines = [f'Search results for "{query}" (type: {search_type}, {len(hits)} results):']
    for n, hit in enumerate(hits, 1):
        lines += ["", f"{n}. {_oneline(hit.title) or '(untitled)'}", f"   URL: {hit.url}"]
        if hit.published:
            lines.append(f"   Published: {hit.published}")
        if snippet := _clip(_oneline(hit.snippet), SNIPPET_CHARS):
            lines.append(f"   {snippet}")
    return "\n".join(lines)


def _oneline(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


async def search_tool(args: SearchArgs, ctx: ToolContext) -> ToolOutcome:
    if not ctx.network:
        return ToolOutcome(status="error", content=f"Could not search: {NO_NETWORK}.")
    query = shape_query(args.query, args.type)
    topic: Topic = "news" if args.type == "news" else "general"
    try:
        backend = make_backend(ctx.settings.search)
        hits = await with_heartbeats(
            backend.search(query, args.max_results, topic=topic),
            ctx.heartbeat,
            every_s=web.HEARTBEAT_EVERY_S,
            detail=lambda waited: f"search waiting {waited:.0f}s",
        )
    except SearchError as exc:
        return ToolOutcome(status="error", content=str(exc))
    hits = hits[: args.max_results]
    text = wrap_untrusted(render(query, args.type, hits), f"search:{query}")
    return ToolOutcome(content=f"{text}\n{FETCH_NOTE}" if hits else text)


TOOL = ToolDefinition(
    name="search",
    description=DESCRIPTION,
    args_model=SearchArgs,
    handler=search_tool,
    danger=Danger.SAFE,
    idempotent=True,
    read_only=True,  # not parallel: search APIs limit requests per second
    compact_keys=("type", "query"),
)
