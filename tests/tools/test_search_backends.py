"""The Brave and SearXNG search backends, against local servers speaking their APIs."""

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from core.settings import SearchSettings
from tests import configured
from tests.tools import searching
from tests.tools.web_fixtures import (
    SEARXNG_FORBIDDEN_HTML,
    LocalWebServer,
    Reply,
    brave_error,
    brave_results,
    searxng_results,
)
from tools import search
from tools.search import FETCH_NOTE, SearchArgs, backend_name, make_backend, search_configured
from tools.search_backends import BraveBackend, SearchError, SearxngBackend, TavilyBackend
from tools.web import USER_AGENT

BRAVE_KEY = "BSA-test-key-456"
BRAVE_PATH = "/res/v1/web/search"
ENV_VARIABLES = (
    "AGENT_SEARCH_BACKEND",
    "TAVILY_API_KEY",
    "TAVILY_BASE_URL",
    "BRAVE_API_KEY",
    "BRAVE_BASE_URL",
    "SEARXNG_URL",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _no_search_yet():
    searching.forget()


@pytest.fixture
def brave():
    """A fake Brave Search API; set ``brave.routes[BRAVE_PATH]`` to change its answer."""
    with LocalWebServer({BRAVE_PATH: _json_reply(brave_results())}) as server:
        searching.use(AGENT_SEARCH_BACKEND="brave", BRAVE_API_KEY=BRAVE_KEY, BRAVE_BASE_URL=server.base_url)
        yield server


@pytest.fixture
def searxng():
    """A fake SearXNG instance with ``json`` in ``search.formats``."""
    with LocalWebServer({"/search": _json_reply(searxng_results())}) as server:
        searching.use(AGENT_SEARCH_BACKEND="searxng", SEARXNG_URL=server.base_url + "/")
        yield server


@pytest.fixture
def ctx(tmp_path):
    return configured.tool_context(workspace=tmp_path, network=True)  # started with --network


def _json_reply(payload, status=200, **kwargs) -> Reply:
    return Reply(status, json.dumps(payload).encode(), "application/json", **kwargs)


def _query(path: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(path).query)


async def _search(ctx, query="temporal durable execution", **kwargs):
    return await search.TOOL.handler(SearchArgs(query=query, **kwargs), searching.searching(ctx))


EXPECTED_HITS = (
    "1. Temporal: durable execution\n"
    "   URL: https://temporal.io/blog/durable-execution\n"
    "   Published: {published}\n"
    "   {snippet}\n\n"
    "2. Workflows | Temporal docs\n"
    "   URL: https://docs.temporal.io/workflows\n"
    "   A Workflow is a sequence of steps."
)


# --- choosing a backend -------------------------------------------------------------


def test_search_backend_defaults_to_tavily_when_nothing_is_set():
    assert backend_name(SearchSettings()) == "tavily"
    with pytest.raises(SearchError, match="set TAVILY_API_KEY"):
        make_backend(SearchSettings())
    assert not search_configured(SearchSettings())


def test_search_backend_prefers_tavily_when_its_key_is_set():
    env = {"TAVILY_API_KEY": "k", "BRAVE_API_KEY": "b", "SEARXNG_URL": "http://s"}
    assert isinstance(make_backend(SearchSettings.from_env(env)), TavilyBackend)


@pytest.mark.parametrize(
    "env, kind",
    [
        ({"BRAVE_API_KEY": "b"}, BraveBackend),
        ({"SEARXNG_URL": "http://s"}, SearxngBackend),
        ({"TAVILY_API_KEY": "k", "AGENT_SEARCH_BACKEND": " Brave ", "BRAVE_API_KEY": "b"}, BraveBackend),
        ({"AGENT_SEARCH_BACKEND": "searxng", "SEARXNG_URL": "http://s", "TAVILY_API_KEY": "k"}, SearxngBackend),
    ],
)
def test_search_backend_is_chosen_by_variable_or_by_the_key_that_is_set(env, kind):
    settings = SearchSettings.from_env(env)
    assert isinstance(make_backend(settings), kind) and search_configured(settings)


def test_the_cli_offers_search_when_its_settings_configure_a_backend():
    from cli.tasks import default_tools

    assert "search" not in (default_tools(SearchSettings.from_env({})) or [])
    assert "search" in (default_tools(SearchSettings.from_env({"BRAVE_API_KEY": "b"})) or [])


def test_search_brave_uses_the_default_base_url_when_none_is_set():
    backend = make_backend(SearchSettings.from_env({"AGENT_SEARCH_BACKEND": "brave", "BRAVE_API_KEY": "b"}))
    assert isinstance(backend, BraveBackend) and backend.base_url == "https://api.search.brave.com"


@pytest.mark.parametrize(
    "name, says", [("brave", "set BRAVE_API_KEY"), ("searxng", "set SEARXNG_URL")]
)
async def test_search_named_backend_without_its_variable_says_how_to_configure_it(ctx, name, says):
    searching.use(AGENT_SEARCH_BACKEND=name, TAVILY_API_KEY="k")  # the key is not used: the named backend wins
    result = await _search(ctx)
    assert result.status == "error" and says in result.content


# --- Brave --------------------------------------------------------------------------


async def test_search_sends_brave_the_exact_request(brave, ctx):
    await _search(ctx, query="rust async", type="api", max_results=3)
    [seen] = brave.requests
    assert (seen.method, urlsplit(seen.path).path) == ("GET", BRAVE_PATH)
    assert _query(seen.path) == {"q": ["rust async API documentation"], "count": ["3"]}
    assert seen.headers["x-subscription-token"] == BRAVE_KEY
    assert seen.headers["accept"] == "application/json"
    assert seen.headers["user-agent"] == USER_AGENT
    assert "authorization" not in seen.headers


async def test_search_renders_brave_hits_like_tavilys(brave, ctx):
    result = await _search(ctx)
    assert result.status == "ok"
    assert 'Search results for "temporal durable execution" (type: info, 2 results):' in result.content
    expected = EXPECTED_HITS.format(
        published="February 11, 2025",
        snippet="Durable execution means code that survives failures.",
    )
    assert expected in result.content
    assert result.content.endswith(f"</untrusted_content>\n{FETCH_NOTE}")


async def test_search_brave_without_web_results_says_no_results(brave, ctx):
    brave.routes[BRAVE_PATH] = _json_reply({"type": "search", "query": {"original": "zzz"}})
    result = await _search(ctx)
    assert result.status == "ok" and 'No results for "temporal durable execution"' in result.content


@pytest.mark.parametrize(
    "status, code, detail",
    [
        (401, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid."),
        (403, "OPTION_NOT_IN_PLAN", "The option is not subscribed in the plan."),
    ],
)
async def test_search_brave_reports_a_refused_key(brave, ctx, status, code, detail):
    brave.routes[BRAVE_PATH] = _json_reply(brave_error(status, code, detail), status)
    result = await _search(ctx)
    assert result.status == "error"
    assert result.content == (
        f"The search service refused the API key (HTTP {status}: {detail}): check BRAVE_API_KEY."
    )


async def test_search_brave_rate_limit_says_to_retry_later(brave, ctx):
    body = brave_error(429, "RATE_LIMITED", "Request rate limit exceeded for plan.")
    brave.routes[BRAVE_PATH] = _json_reply(body, 429, headers={"X-RateLimit-Reset": "1, 1419704"})
    with pytest.raises(SearchError) as caught:
        await make_backend(searching.settings()).search("q", 5, topic="general")
    assert caught.value.retryable
    assert str(caught.value) == (
        "The search service is rate limiting (HTTP 429: Request rate limit exceeded for plan.); "
        "the search may be retried later."
    )


async def test_search_brave_validation_error_is_not_retryable(brave):
    body = brave_error(422, "VALIDATION", "Unable to validate request parameter(s)")
    brave.routes[BRAVE_PATH] = _json_reply(body, 422)
    with pytest.raises(SearchError) as caught:
        await make_backend(searching.settings()).search("q", 5, topic="general")
    assert not caught.value.retryable
    assert "rejected the request (HTTP 422: Unable to validate request parameter(s))" in str(caught.value)


async def test_search_brave_timeout_is_a_retryable_error(brave):
    brave.routes[BRAVE_PATH] = _json_reply(brave_results(), delay_s=3.0)
    backend = BraveBackend(BRAVE_KEY, brave.base_url, timeout_s=0.2)
    with pytest.raises(SearchError) as caught:
        await backend.search("q", 5, topic="general")
    assert caught.value.retryable and "did not answer in time" in str(caught.value)


# --- SearXNG ------------------------------------------------------------------------


async def test_search_sends_searxng_the_exact_request(searxng, ctx):
    await _search(ctx, query="rust async", type="research", max_results=3)
    [seen] = searxng.requests
    assert (seen.method, urlsplit(seen.path).path) == ("GET", "/search")
    assert _query(seen.path) == {"q": ["rust async research paper"], "format": ["json"]}
    assert seen.headers["user-agent"] == USER_AGENT


async def test_search_searxng_news_asks_for_the_news_category(searxng, ctx):
    await _search(ctx, query="temporal", type="news")
    assert _query(searxng.requests[-1].path) == {
        "q": ["temporal latest news"],
        "format": ["json"],
        "categories": ["news"],
    }


async def test_search_renders_searxng_hits_like_tavilys(searxng, ctx):
    result = await _search(ctx)
    assert result.status == "ok"
    expected = EXPECTED_HITS.format(
        published="2025-02-11T00:00:00",
        snippet="Durable execution means code that survives failures.",
    )
    assert expected in result.content


async def test_search_searxng_keeps_at_most_max_results_hits(searxng):
    searxng.routes["/search"] = _json_reply(searxng_results(9))
    hits = await make_backend(searching.settings()).search("q", 4, topic="general")
    assert len(hits) == 4


async def test_search_searxng_with_json_disabled_says_to_enable_it(searxng, ctx):
    searxng.routes["/search"] = Reply(403, SEARXNG_FORBIDDEN_HTML)
    result = await _search(ctx)
    assert result.status == "error"
    assert "HTTP 403" in result.content
    assert "Add json to search.formats" in result.content and "settings.yml" in result.content


async def test_search_searxng_limiter_is_a_retryable_error(searxng):
    searxng.routes["/search"] = Reply(429, b"Too Many Requests", "text/plain")
    with pytest.raises(SearchError) as caught:
        await make_backend(searching.settings()).search("q", 5, topic="general")
    assert caught.value.retryable and "rate limiting (HTTP 429)" in str(caught.value)


async def test_search_searxng_html_answer_is_unreadable(searxng, ctx):
    searxng.routes["/search"] = Reply(200, b"<html><title>SearXNG</title></html>")
    result = await _search(ctx)
    assert result.status == "error" and "could not be read" in result.content
