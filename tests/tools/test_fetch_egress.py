"""fetch_url under the egress policy, against real servers on loopback addresses (Linux
routes all of 127.0.0.0/8 to loopback, so a second server listens on 127.0.0.2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.settings import EgressSettings, variables
from tests import configured
from tests.tools.web_fixtures import LocalWebServer, Reply
from tools import egress, fetch
from tools.egress import NO_NETWORK
from tools.fetch import FetchArgs

PAGE = Reply(body=b"<title>Inside</title><p>The other server's page.</p>")


@pytest.fixture(autouse=True)
def no_extra_deny(monkeypatch):
    for name in variables(EgressSettings):  # the built-in list only
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def second():
    """The server a redirect points at, on 127.0.0.2."""
    with LocalWebServer({"/page": PAGE}, host="127.0.0.2") as running:
        yield running


@pytest.fixture
def first(second):
    """The server on 127.0.0.1 whose /away redirects to the second one."""
    with LocalWebServer({"/away": Reply(302, headers={"Location": second.url("/page")}), "/page": PAGE}) as running:
        yield running


async def _fetch(url: str, workspace: Path, *, network: bool = True):
    return await fetch.TOOL.handler(FetchArgs.model_validate({"url": url}), configured.tool_context(workspace, network=network))


async def test_fetch_without_network_sends_nothing_and_says_how_to_get_it(first, tmp_path):
    result = await _fetch(first.url("/page"), tmp_path, network=False)
    assert result.status == "error"
    assert result.content == f"Could not fetch the page: {NO_NETWORK}."
    assert "no network access" in result.content and "--network" in result.content
    assert first.requests == []


async def test_a_redirect_to_the_second_loopback_address_is_followed_when_nothing_denies_it(first, second, tmp_path):
    result = await _fetch(first.url("/away"), tmp_path)  # so that a zero count below means refused
    assert result.status == "ok" and "The other server's page." in result.content
    assert len(second.requests) == 1


@pytest.mark.parametrize(
    "variable, entry",
    [("AGENT_DENY_HOSTS", "127.0.0.2"), ("AGENT_DENY_HOSTS", "127.0.0.2/31"),
     ("AGENT_DENY_HOSTS", "example.org, 127.0.0.[23]"), ("AGENT_BROWSER_DENY_HOSTS", "127.0.0.2")],
)  # fmt: skip
async def test_a_redirect_to_a_denied_host_is_refused_before_it_is_sent(
    first, second, tmp_path, monkeypatch, variable, entry
):
    configured.use(monkeypatch, **{variable: entry})
    result = await _fetch(first.url("/away"), tmp_path)
    assert result.status == "error", result.content
    assert "the host 127.0.0.2 is on the deny list" in result.content
    assert "refused before anything was sent" in result.content
    assert [seen.path for seen in first.requests] == ["/away"]
    assert second.requests == []


async def test_a_host_name_that_resolves_to_a_denied_address_is_refused(first, tmp_path, monkeypatch):
    configured.use(monkeypatch, AGENT_DENY_HOSTS="127.0.0.0/8")
    port = first.base_url.rsplit(":", 1)[1]
    result = await _fetch(f"http://localhost:{port}/page", tmp_path)
    assert result.status == "error", result.content
    assert "the host localhost resolves to 127.0.0.1, which is on the deny list (127.0.0.0/8)" in result.content
    assert first.requests == []


@pytest.mark.parametrize(
    "url, entry",
    [("http://169.254.169.254/latest/meta-data/", "169.254.169.254"), ("http://2852039166/", "169.254.169.254"),
     ("http://169.254.7.7/", "169.254.0.0/16"), ("http://[fe80::1]/", "fe80::/10"),
     ("http://[::ffff:169.254.1.2]/", "169.254.0.0/16"), ("http://metadata.google.internal/", "metadata.google.internal")],
)  # fmt: skip
async def test_metadata_and_link_local_hosts_are_refused_by_default(tmp_path, url, entry):
    result = await _fetch(url, tmp_path)
    assert result.status == "error" and f"is on the deny list ({entry};" in result.content, result.content


async def test_fetch_connects_to_the_address_it_checked_with_the_name_in_the_host_header(
    first, tmp_path, monkeypatch
):
    looked_up: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:  # a name only this resolver knows
        looked_up.append(host)
        return ["127.0.0.1"]

    monkeypatch.setattr(egress, "resolve", resolve)
    port = first.base_url.rsplit(":", 1)[1]
    result = await _fetch(f"http://pinned.test:{port}/page", tmp_path)
    assert result.status == "ok", result.content  # the system resolver was never asked
    assert looked_up == ["pinned.test"]
    assert first.requests[-1].headers["host"] == f"pinned.test:{port}"


async def test_a_name_whose_first_address_refuses_is_tried_at_the_next_checked_one(first, tmp_path, monkeypatch):
    async def resolve(host: str, port: int) -> list[str]:
        return ["127.0.0.3", "127.0.0.1"]  # nothing listens on 127.0.0.3

    monkeypatch.setattr(egress, "resolve", resolve)
    port = first.base_url.rsplit(":", 1)[1]
    result = await _fetch(f"http://twice.test:{port}/page", tmp_path)
    assert result.status == "ok", result.content
    assert first.requests[-1].headers["host"] == f"twice.test:{port}"


async def test_one_denied_address_among_several_refuses_the_name(first, tmp_path, monkeypatch):
    async def resolve(host: str, port: int) -> list[str]:
        return ["127.0.0.1", "169.254.169.254"]

    monkeypatch.setattr(egress, "resolve", resolve)
    port = first.base_url.rsplit(":", 1)[1]
    result = await _fetch(f"http://mixed.test:{port}/page", tmp_path)
    assert result.status == "error"
    assert "the host mixed.test resolves to 169.254.169.254, which is on the deny list" in result.content
    assert first.requests == []
