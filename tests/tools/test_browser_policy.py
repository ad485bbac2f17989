"""The browser's URL rules and its policy proxy, without a browser (always run)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests import configured
from tests.tools.web_fixtures import LocalWebServer, Reply
from tools.browser.policy import Policy, workspace_url
from tools.egress import canonical_host
from tools.egress_proxy import PolicyProxy


def _policy(network: bool, workspace: Path, hidden: tuple[Path, ...] = ()) -> Policy:
    """A tool call's policy on a worker started in this test's environment."""
    return Policy.of(configured.tool_context(workspace, network=network, hidden=hidden))


@pytest.mark.parametrize(
    "host, canonical",
    [
        ("169.254.169.254", "169.254.169.254"), ("2852039166", "169.254.169.254"),
        ("0xA9FEA9FE", "169.254.169.254"), ("0251.0376.0251.0376", "169.254.169.254"),
        ("[FD00:EC2::254]", "fd00:ec2::254"), ("Metadata.Google.Internal.", "metadata.google.internal"),
        ("example.com", "example.com"), ("1.example", "1.example"),
    ],
)  # fmt: skip
def test_hosts_are_compared_in_the_form_chromium_writes_them(host, canonical):
    assert canonical_host(host) == canonical


def test_the_environment_adds_to_the_built_in_deny_list(monkeypatch, tmp_path):
    monkeypatch.delenv("AGENT_DENY_HOSTS", raising=False)
    configured.use(monkeypatch, AGENT_BROWSER_DENY_HOSTS=" *.internal ,10.0.0.1,,")
    hosts = _policy(True, tmp_path).egress.deny.entries
    assert "169.254.169.254" in hosts and "metadata.google.internal" in hosts
    assert hosts[-2:] == ("*.internal", "10.0.0.1")


@pytest.mark.parametrize(
    "url, network, expected",
    [
        ("https://example.com/", True, None),
        ("https://example.com/", False, "the task has no network access"),
        ("http://169.254.169.254/", True, "is on the deny list (169.254.169.254;"),
        ("http://[::ffff:169.254.169.254]/", True, "deny list"),
        ("http://a:b@example.com/", True, "user name or password"),
        ("data:text/html,<p>hi</p>", False, None),
        ("about:blank", False, None),
        ("blob:https://example.com/1234", False, None),
        ("about:config", True, "only http, https and file URLs"),
        ("chrome://settings", True, "only http, https and file URLs"),
        ("file://otherhost/etc/passwd", True, "file URLs on another host are refused"),
    ],
)
def test_the_rules_for_each_kind_of_url(tmp_path, url, network, expected):
    reason = _policy(network, tmp_path).refusal(url)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason


def test_file_urls_are_allowed_inside_the_workspace_only(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.html").write_text("<p>a</p>")
    (tmp_path / "out.html").symlink_to("/etc/hostname")
    policy = _policy(False, tmp_path)
    assert policy.refusal((tmp_path / "docs" / "a.html").as_uri()) is None
    assert policy.refusal(tmp_path.as_uri()) is None
    assert "outside the workspace" in (policy.refusal((tmp_path / "out.html").as_uri()) or "")
    assert "outside the workspace" in (policy.refusal((tmp_path / "docs" / ".." / ".." / "x").as_uri()) or "")


def test_paths_hidden_from_the_tools_stay_hidden_inside_the_workspace(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "secrets.json").write_text("{}")
    policy = _policy(False, tmp_path, hidden=(tmp_path / "data",))
    assert "hidden from the tools" in (policy.refusal((tmp_path / "data" / "secrets.json").as_uri()) or "")
    assert policy.refusal((tmp_path / "notes.html").as_uri()) is None


@pytest.mark.parametrize(
    "target, expected",
    [
        ("https://x.org/a", "https://x.org/a"), ("example.com/path", "https://example.com/path"),
        ("localhost:8000/x", "http://localhost:8000/x"), ("127.0.0.1:5000", "http://127.0.0.1:5000"),
        ("javascript:alert(1)", "javascript:alert(1)"), ("/etc/hostname", "file:///etc/hostname"),
    ],
)  # fmt: skip
def test_what_visit_opens_for_what_the_model_wrote(tmp_path, target, expected):
    assert workspace_url(target, tmp_path) == expected


def test_a_workspace_path_becomes_its_file_url(tmp_path):
    (tmp_path / "page.html").write_text("x")
    assert workspace_url("page.html", tmp_path) == (tmp_path / "page.html").resolve().as_uri()


async def test_a_host_name_that_resolves_to_a_denied_address_is_refused(tmp_path, monkeypatch):
    configured.use(monkeypatch, AGENT_BROWSER_DENY_HOSTS="127.0.0.1")
    reason = await _policy(True, tmp_path).check("http://localhost:9/")
    assert reason is not None and "the host localhost resolves to 127.0.0.1" in reason


# --- the proxy ---------------------------------------------------------------------------------


@dataclass
class Owner:
    policy: Policy
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        self.notes.append(text)


async def _exchange(proxy_url: str, request: bytes) -> bytes:
    host, port = proxy_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()


@pytest.fixture
async def proxied(tmp_path):
    owner = Owner(_policy(True, tmp_path))
    proxy = PolicyProxy(owner)
    url = await proxy.start()
    yield owner, url
    proxy.close()
    proxy.close()  # twice: nothing happens


async def test_the_proxy_forwards_an_allowed_request_in_origin_form(proxied):
    owner, proxy_url = proxied
    with LocalWebServer({"/hello": Reply(body=b"<p>hello</p>")}) as server:
        request = f"GET {server.url('/hello?x=1')} HTTP/1.1\r\nHost: x\r\nProxy-Connection: keep-alive\r\n\r\n"
        answer = await _exchange(proxy_url, request.encode())
        assert answer.startswith(b"HTTP/1.0 200") or answer.startswith(b"HTTP/1.1 200")
        assert answer.endswith(b"<p>hello</p>") and b"\r\nConnection: close\r\n" in answer
        seen = server.requests[-1]
        assert seen.path == "/hello?x=1" and "proxy-connection" not in seen.headers
        assert seen.headers["connection"] == "close"
    assert owner.notes == []


async def test_the_proxy_refuses_a_denied_host_by_closing_and_noting(proxied):
    owner, proxy_url = proxied
    answer = await _exchange(proxy_url, b"GET http://169.254.169.254/latest/ HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer == b""  # a network error for the page, not a page of its own
    assert owner.notes == [
        "refused http://169.254.169.254/latest/: the host 169.254.169.254 is on the deny list "
        "(169.254.169.254; see AGENT_DENY_HOSTS)"
    ]


async def test_the_proxy_refuses_a_tunnel_to_a_denied_host_with_403(proxied):
    owner, proxy_url = proxied
    answer = await _exchange(proxy_url, b"CONNECT [fd00:ec2::254]:443 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert owner.notes[0].startswith("refused a connection to [fd00:ec2::254]:443: the host fd00:ec2::254 is on")


async def test_the_proxy_checks_the_address_a_name_resolves_to(proxied, monkeypatch, tmp_path):
    owner, proxy_url = proxied
    configured.use(monkeypatch, AGENT_BROWSER_DENY_HOSTS="127.0.0.1")
    owner.policy = _policy(True, tmp_path)
    answer = await _exchange(proxy_url, b"CONNECT localhost:9 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403")
    assert "the host localhost resolves to 127.0.0.1, which is on the deny list" in owner.notes[0]


async def test_the_proxy_refuses_everything_without_network(proxied, tmp_path):
    owner, proxy_url = proxied
    owner.policy = _policy(False, tmp_path)
    answer = await _exchange(proxy_url, b"CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403") and "the task has no network access" in owner.notes[0]


async def test_the_proxy_tunnels_an_allowed_connection(proxied):
    _, proxy_url = proxied
    with LocalWebServer({"/t": Reply(body=b"tunnelled")}) as server:
        port = server.base_url.rsplit(":", 1)[1]
        host, proxy_port = proxy_url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(proxy_port))
        writer.write(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200 Connection established")
        writer.write(b"GET /t HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        body = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        assert body.endswith(b"tunnelled")
