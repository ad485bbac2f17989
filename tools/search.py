"""The ``search`` tool: a web search that returns summaries and candidate URLs.

Search is step one of two: it finds pages, ``fetch_url`` reads them. The
result ends with a note saying so. The ``type`` argument makes the model say
what it is after, and shapes the query (``QUERY_SUFFIX``): "news" appends
"latest news" and asks the backend for its news topic, "research" appends
"research paper", and so on.

Backends are pluggable (``tools.search_backends``). ``AGENT_SEARCH_BACKEND``
names one in ``BACKENDS`` (``tavily``, ``brave`` or ``searxng``), each built
from ``Settings.search`` (in the call's ``ToolContext``). When
``AGENT_SEARCH_BACKEND`` is unset, the first backend in ``AUTO_DETECT`` whose
variable is set is used, Tavily first; with none set it is Tavily, whose
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
from typing import Literal

from core.heartbeat import with_heartbeats
from core.settings import SearchSettings
from core.untrusted import wrap_untrusted
from tools import web
from tools.base import Danger, Field, StrictArgs, ToolContext, ToolDefinition, ToolOutcome
from tools.egress import NO_NETWORK
from tools.search_backends import (
    BraveBackend,
    SearchBackend,
    SearchError,
    SearchHit,
    SearxngBackend,
    TavilyBackend,
    Topic,
    clip,
)

SearchType = Literal["info", "news", "research", "api", "data", "image", "tool"]

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


# --- which backend ------------------------------------------------------------

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


# --- the tool -----------------------------------------------------------------


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
        if snippet := clip(_oneline(hit.snippet), SNIPPET_CHARS):
            lines.append(f"   {snippet}")
    return "\n".join(lines)


def _oneline(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


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
