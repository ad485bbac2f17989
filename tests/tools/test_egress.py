"""The egress policy's deny list and rules, and its transport against a local TLS server."""

from __future__ import annotations

import httpx
import pytest

from core.settings import EgressSettings
from tests.tools.web_fixtures import LocalWebServer, Reply, tls_pair
from tools import egress as egress_module
from tools.egress import (
    ALLOW_ENV,
    DEFAULT_DENY,
    NO_NETWORK,
    DenyList,
    Egress,
    EgressTransport,
    Refused,
    allow_list,
    canonical_host,
    deny_list,
)


def test_the_default_deny_list_is_cloud_metadata_and_link_local():
    entries = deny_list().entries
    assert entries == DEFAULT_DENY
    assert {"169.254.169.254", "fd00:ec2::254", "169.254.0.0/16", "fe80::/10"} <= set(entries)


def test_both_variables_add_to_the_deny_list_in_canonical_form():
    environ = {"AGENT_DENY_HOSTS": " Intranet.Example. ,10.1.2.3/8", "AGENT_BROWSER_DENY_HOSTS": "*.internal,FE80::/10,,"}
    extra = EgressSettings.from_env(environ).deny_hosts
    assert deny_list(extra).entries[len(DEFAULT_DENY):] == ("intranet.example", "10.0.0.0/8", "*.internal")


def test_a_malformed_range_is_an_error_not_a_hole():
    with pytest.raises(ValueError, match=r"'10\.0\.0\.0/33' is not an address range"):
        deny_list(EgressSettings.from_env({"AGENT_DENY_HOSTS": "10.0.0.0/33"}).deny_hosts)


@pytest.mark.parametrize(
    "host, entry",
    [("169.254.169.254", "169.254.169.254"), ("169.254.3.4", "169.254.0.0/16"), ("fe80::1", "fe80::/10"),
     ("::ffff:169.254.3.4", "169.254.0.0/16"), ("10.9.8.7", "10.0.0.0/8"), ("db.corp.internal", "*.internal"),
     ("127.0.0.1", None), ("example.com", None), ("10.example", None), ("::1", None)],
)  # fmt: skip
def test_a_host_matches_names_globs_and_ranges(host, entry):
    deny = deny_list(("10.0.0.0/8", "*.internal"))
    assert deny.match(canonical_host(host)) == entry


@pytest.mark.parametrize(
    "host, canonical",
    [("[FE80::1%25eth0]", "fe80::1"), ("fe80::1%eth0", "fe80::1"), ("0xA9FEA9FE", "169.254.169.254"),
     ("127.0.0.[23]", "127.0.0.[23]"), ("Example.COM.", "example.com")],
)  # fmt: skip
def test_canonical_hosts_drop_zones_and_keep_globs(host, canonical):
    assert canonical_host(host) == canonical


def test_without_network_every_host_is_refused_and_the_reason_says_how_to_get_it():
    egress = Egress(network=False, deny=DenyList(()))
    assert egress.refusal("example.com") == NO_NETWORK and "--network" in NO_NETWORK
    assert Egress(network=True, deny=DenyList(())).refusal("example.com") is None


async def test_addresses_refuses_a_denied_literal_address_without_resolving():
    egress = Egress(network=True, deny=deny_list())
    with pytest.raises(Refused, match=r"the host 169\.254\.169\.254 is on the deny list \(169\.254\.169\.254; see AGENT_DENY_HOSTS\)"):
        await egress.addresses("2852039166", 80)
    assert await egress.addresses("127.0.0.1", 80) == ["127.0.0.1"]


# --- the transport over TLS: the connection goes to the checked address, TLS speaks to the name




async def test_the_transport_connects_to_the_checked_address_with_the_names_tls(tmp_path, monkeypatch):
    server_tls, client_tls = tls_pair(tmp_path, "pinned.test")
    names: list[str | None] = []
    server_tls.sni_callback = lambda _sock, name, _ctx: names.append(name)

    async def resolve(host: str, port: int) -> list[str]:  # a name only this resolver knows
        return ["127.0.0.1"]

    monkeypatch.setattr(egress_module, "resolve", resolve)
    transport = EgressTransport(Egress(network=True, deny=deny_list()), verify=client_tls)
    with LocalWebServer({"/page": Reply(body=b"over tls")}, tls=server_tls) as server:
        port = server.base_url.rsplit(":", 1)[1]
        async with httpx.AsyncClient(transport=transport) as client:
            response = await client.get(f"https://pinned.test:{port}/page")
    assert response.status_code == 200 and response.text == "over tls"
    assert names == ["pinned.test"]  # SNI, and the certificate was checked against the name
    assert server.requests[0].headers["host"] == f"pinned.test:{port}"
    assert str(response.url) == f"https://pinned.test:{port}/page"


# --- the allow list of shell commands (AGENT_NETWORK_ALLOW)


def test_the_default_allow_list_is_any_public_address_and_nothing_else():
    allowed = allow_list(EgressSettings.from_env({}).network_allow)
    assert allowed.allows_address("93.184.216.34") and allowed.allows_address("2606:2800:220:1::1")
    for private in ("127.0.0.1", "10.1.2.3", "192.168.0.1", "::1", "::ffff:127.0.0.1", "100.64.0.1", "fc00::1"):
        assert not allowed.allows_address(canonical_host(private)), private


def test_an_allow_list_matches_names_globs_addresses_and_ranges():
    allowed = allow_list(["pypi.org", "*.github.com", "127.0.0.1", "10.0.0.0/8"])
    assert allowed.allows("pypi.org") and allowed.allows("api.github.com") and not allowed.allows("github.com.evil")
    assert allowed.allows_address("127.0.0.1") and allowed.allows_address("10.9.8.7")
    assert not allowed.allows_address("127.0.0.2") and not allowed.allows_address("93.184.216.34")  # no "public"
    with pytest.raises(ValueError, match=ALLOW_ENV):
        allow_list(["10.0.0.0/33"])


async def test_commands_reach_a_listed_name_wherever_it_resolves_and_nothing_else_unlisted(monkeypatch):
    async def resolve(host: str, port: int) -> list[str]:
        return {"build.internal.test": ["10.0.0.5"], "other.test": ["10.0.0.6"]}[host]

    monkeypatch.setattr(egress_module, "resolve", resolve)
    fence = Egress.commands(EgressSettings.from_env({ALLOW_ENV: "public,*.internal.test"}))
    assert await fence.addresses("build.internal.test", 443) == ["10.0.0.5"]
    with pytest.raises(Refused, match=f"the host other.test resolves to 10.0.0.6, which is not in {ALLOW_ENV}"):
        await fence.addresses("other.test", 443)
    with pytest.raises(Refused, match=f"the host 127.0.0.1 is not in {ALLOW_ENV} \\(public, \\*.internal.test\\)"):
        await fence.addresses("127.0.0.1", 80)


async def test_the_deny_list_wins_over_an_allow_list_that_matches_everything():
    fence = Egress.commands(EgressSettings.from_env({ALLOW_ENV: "*,0.0.0.0/0"}))
    with pytest.raises(Refused, match="deny list"):
        await fence.addresses("169.254.169.254", 80)
