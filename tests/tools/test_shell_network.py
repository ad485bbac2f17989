"""Shell commands' network: only through the worker's proxy, under the egress policy.

Real bubblewrap (``sandboxing.require``: CI fails instead of skipping) and real servers on
this host's loopback, which a sandboxed command can reach only through the proxy: its own
loopback is another one.
"""

from __future__ import annotations

import os
import sys

import pytest

from core.settings import EgressSettings
from tests import configured, sandboxing
from tests.tools.web_fixtures import LocalWebServer, Reply, tls_pair
from tools.egress import ALLOW_ENV
from tools.shell_network import CommandEgress

PAGE = Reply(body=b"hello from the host\n", content_type="text/plain")
# The worker's interpreter: the one Python a networked command is sure to find (the bridge's).
PYTHON = os.path.realpath(sys.executable)


@pytest.fixture
def box(monkeypatch):
    return sandboxing.require(monkeypatch)


@pytest.fixture
def server():
    with LocalWebServer({"/": PAGE}) as found:
        yield found


def _outlet(allow: str) -> CommandEgress:
    return CommandEgress(EgressSettings.from_env({ALLOW_ENV: allow}))


@pytest.fixture
def outlet():
    found = _outlet("127.0.0.1")
    yield found
    found.close()


def _ctx(tmp_path, outlet: CommandEgress, network: bool = True):
    return configured.tool_context(tmp_path, network=network, command_egress=outlet)


async def test_a_networked_command_reaches_an_allowed_host_with_curl_and_urllib(box, server, outlet, tmp_path):
    fetch = f"import urllib.request; print(urllib.request.urlopen('{server.url('/')}').read().decode(), end='')"
    result = await sandboxing.run(_ctx(tmp_path, outlet), f"curl -sS {server.url('/')} && {PYTHON} -c \"{fetch}\"")
    assert result.content == "hello from the host\nhello from the host\n[exit code: 0]"
    assert [(seen.method, seen.path) for seen in server.requests] == [("GET", "/"), ("GET", "/")]  # origin form


async def test_a_networked_command_opens_an_https_tunnel(box, outlet, tmp_path):
    tls, _client = tls_pair(tmp_path, "localhost")
    with LocalWebServer({"/": PAGE}, tls=tls) as secure:
        result = await sandboxing.run(_ctx(tmp_path, outlet), f"curl -sSk {secure.url('/')}")
    assert result.content == "hello from the host\n[exit code: 0]"
    assert len(secure.requests) == 1


async def test_a_host_not_allowed_is_refused_and_the_result_names_it_and_the_variable(box, outlet, tmp_path):
    tls, _client = tls_pair(tmp_path, "localhost")
    with LocalWebServer({"/": PAGE}, host="127.0.0.2") as plain, LocalWebServer({"/": PAGE}, "127.0.0.2", tls) as secure:
        command = f"curl -s {plain.url('/')}; curl -sk {secure.url('/')}; echo rc=$?"
        result = await sandboxing.run(_ctx(tmp_path, outlet), command)
        assert plain.requests == [] and secure.requests == []
    why = f"the host 127.0.0.2 is not in {ALLOW_ENV} (127.0.0.1): add it there to reach it"
    # The plain request's 403 shows its line; the tunnel fails (56), and the result says why.
    assert result.content.startswith(f"{why}\nrc=56\n[exit code: 0]\n")
    assert f"[network: refused {plain.url('/')}: {why}]" in result.content
    assert f"[network: refused a connection to {secure.base_url.split('//')[1]}: {why}]" in result.content


async def test_the_deny_list_is_refused_even_when_a_glob_allows_it(box, tmp_path):
    outlet = _outlet("*,169.254.*")
    try:
        result = await sandboxing.run(_ctx(tmp_path, outlet), "curl -s http://169.254.169.254/latest/meta-data/")
    finally:
        outlet.close()
    assert result.content.startswith("the host 169.254.169.254 is on the deny list (169.254.169.254; see AGENT_DENY_HOSTS)")


async def test_a_networked_command_has_no_way_out_but_the_proxy(box, server, outlet, tmp_path):
    result = await sandboxing.run(_ctx(tmp_path, outlet), f"curl -s --noproxy '*' {server.url('/')}; echo rc=$?")
    assert result.content == "rc=7\n[exit code: 0]"  # could not connect: its loopback is its own
    assert server.requests == []


async def test_without_network_nothing_leaves_and_no_proxy_is_set(box, server, outlet, tmp_path):
    command = f"env | grep -ci proxy; curl -s {server.url('/')}; echo rc=$?; ls -a /tmp | grep -c egress"
    result = await sandboxing.run(_ctx(tmp_path, outlet, network=False), command)
    assert result.content == "0\nrc=7\n0\n[exit code: 1]"  # no proxy variable, no socket
    assert server.requests == []


async def test_the_bridge_leaves_the_commands_output_and_exit_code_alone(box, outlet, tmp_path):
    command = "echo out; echo err >&2; yes | head -1; echo ${PIPESTATUS[0]}; exit 3"
    result = await sandboxing.run(_ctx(tmp_path, outlet), command)
    assert result.content == "out\nerr\ny\n141\n[exit code: 3]"  # SIGPIPE at its default, as in bash
    killed = await sandboxing.run(_ctx(tmp_path, outlet), "kill -TERM $$")
    plain = await sandboxing.run(_ctx(tmp_path, outlet, network=False), "kill -TERM $$")
    assert killed.exit_code == plain.exit_code
