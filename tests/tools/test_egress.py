"""The egress policy's deny list and rules, without a network."""

from __future__ import annotations

import pytest

from tools.egress import DEFAULT_DENY, NO_NETWORK, DenyList, Egress, Refused, canonical_host, deny_list


def test_the_default_deny_list_is_cloud_metadata_and_link_local():
    entries = deny_list({}).entries
    assert entries == DEFAULT_DENY
    assert {"169.254.169.254", "fd00:ec2::254", "169.254.0.0/16", "fe80::/10"} <= set(entries)


def test_both_variables_add_to_the_deny_list_in_canonical_form():
    environ = {"AGENT_DENY_HOSTS": " Intranet.Example. ,10.1.2.3/8", "AGENT_BROWSER_DENY_HOSTS": "*.internal,FE80::/10,,"}
    assert deny_list(environ).entries[len(DEFAULT_DENY):] == ("intranet.example", "10.0.0.0/8", "*.internal")


def test_a_malformed_range_is_an_error_not_a_hole():
    with pytest.raises(ValueError, match=r"'10\.0\.0\.0/33' is not an address range"):
        deny_list({"AGENT_DENY_HOSTS": "10.0.0.0/33"})


@pytest.mark.parametrize(
    "host, entry",
    [("169.254.169.254", "169.254.169.254"), ("169.254.3.4", "169.254.0.0/16"), ("fe80::1", "fe80::/10"),
     ("::ffff:169.254.3.4", "169.254.0.0/16"), ("10.9.8.7", "10.0.0.0/8"), ("db.corp.internal", "*.internal"),
     ("127.0.0.1", None), ("example.com", None), ("10.example", None), ("::1", None)],
)  # fmt: skip
def test_a_host_matches_names_globs_and_ranges(host, entry):
    deny = deny_list({"AGENT_DENY_HOSTS": "10.0.0.0/8,*.internal"})
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
    egress = Egress(network=True, deny=deny_list({}))
    with pytest.raises(Refused, match=r"the host 169\.254\.169\.254 is on the deny list \(169\.254\.169\.254; see AGENT_DENY_HOSTS\)"):
        await egress.addresses("2852039166", 80)
    assert await egress.addresses("127.0.0.1", 80) == ["127.0.0.1"]
