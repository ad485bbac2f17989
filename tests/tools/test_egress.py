"""The egress policy's deny list and rules, and its transport against a local TLS server."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from core.settings import EgressSettings
from tests.tools.web_fixtures import LocalWebServer, Reply
from tools import egress as egress_module
from tools.egress import (
    DEFAULT_DENY,
    NO_NETWORK,
    DenyList,
    Egress,
    EgressTransport,
    Refused,
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


def _tls_pair(tmp_path: Path, name: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for ``name`` from a throwaway CA, and a client
    context that trusts only that CA."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "egress test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_name).public_key(leaf_key.public_key()).serial_number(2).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    (tmp_path / "leaf.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM) + leaf_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "leaf.pem")
    client = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    return server, client


async def test_the_transport_connects_to_the_checked_address_with_the_names_tls(tmp_path, monkeypatch):
    server_tls, client_tls = _tls_pair(tmp_path, "pinned.test")
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
