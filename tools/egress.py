"""The one egress policy: where a tool that reaches the network may connect.

Page text, search hits and tool results can steer the model, and a host file a ``safe``
command read can be sent out in a URL; so every connection a tool opens to a place the
model chose is fenced the same way (``fetch_url`` and each hop of its redirects, the
browser and everything its pages load, a task's own MCP servers over HTTP):

- only in a task started with ``--network`` (``ToolContext.network``): without it nothing
  is sent (``NO_NETWORK``);
- never to a host on the deny list, nor to a host name any of whose addresses is on it.
  ``DEFAULT_DENY``: cloud metadata endpoints and the link-local ranges, plus
  ``AGENT_DENY_HOSTS`` (and ``AGENT_BROWSER_DENY_HOSTS``, its older name, also read):
  comma-separated host names, globs (``*.internal``), addresses and CIDR ranges
  (``Settings.egress``, in each tool call's ``ToolContext``; ``Egress.of`` builds the
  call's fence from it);
- for shell commands (through their proxy, ``tools/shell_network.py``), also only to what
  ``AGENT_NETWORK_ALLOW`` lists (``AllowList``; default ``public``: any public address),
  the host by name or else every address it resolves to (``Egress.commands``).

Hosts are compared in canonical form (``canonical_host``): lower case, no brackets,
trailing dot or IPv6 zone, addresses as Chromium writes them (``0xA9FEA9FE`` and
``2852039166`` are ``169.254.169.254``), an IPv4-mapped IPv6 address also as its IPv4 one.

``EgressTransport`` is how an httpx client obeys it: each request's host is resolved
once, every address checked, and the connection made to a checked address, with the Host
header and the TLS name (SNI and certificate check) of the URL's host, so a DNS answer
that changes after the check (rebinding) is never used; the browser's proxy does the same
for Chromium. MCP servers over HTTP are checked just before the SDK connects (it resolves
again: their URL is configuration, not the model's choice). The deny list fences the
well-known targets of request forgery; it is not a firewall.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from functools import cache

import httpx

from core.settings import EgressSettings

DENY_ENV = "AGENT_DENY_HOSTS"
ALLOW_ENV = "AGENT_NETWORK_ALLOW"
# Cloud metadata endpoints (AWS, Azure, GCP and Oracle's 169.254.169.254, AWS's IPv6 one, ECS
# task metadata, Alibaba, GCP's names), then every link-local address. Named before the
# ranges so that a refusal names the endpoint.
DEFAULT_DENY = (
    "169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200",
    "metadata.google.internal", "metadata.goog", "169.254.0.0/16", "fe80::/10",
)  # fmt: skip
NO_NETWORK = "the task has no network access: its tools reach the network only when it is started with --network"
_NUMERIC_HOST = re.compile(r"^(?:0x[0-9a-f]+|[0-9]+)(?:\.(?:0x[0-9a-f]+|[0-9]+)){0,3}$")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Refused(Exception):
    """A connection the policy does not allow; the message says which rule, for the model."""


class Unreachable(Exception):
    """A host name that does not resolve."""


def canonical_host(host: str) -> str:
    """``host`` as Chromium writes it: lower case, no brackets, trailing dot or zone, IPs canonical."""
    host = host.strip().rstrip(".").lower()
    if host.startswith("[") and host.endswith("]"):  # not .strip("[]"): a glob may end in [23]
        host = host[1:-1]
    if ":" in host:  # an IPv6 address: its zone (fe80::1%eth0, %25 in a URL) names no other host
        host = host.split("%", 1)[0]
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        pass
    if _NUMERIC_HOST.match(host):  # 2852039166, 0xa9fea9fe, 0251.0376.0251.0376
        try:
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            pass
    return host


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


@cache
def _network(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    return ipaddress.ip_network(entry, strict=False) if "/" in entry else None


@dataclass(frozen=True)
class DenyList:
    """Canonical entries: host names, globs, addresses and CIDR ranges, in the order given."""

    entries: tuple[str, ...]

    def match(self, host: str) -> str | None:
        """The first entry ``host`` (canonical: see ``canonical_host``) matches, or None."""
        address = _address(host)
        mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        forms = (host, mapped.compressed) if mapped else (host,)
        addresses = [a for a in (address, mapped) if a is not None]
        for entry in self.entries:
            network = _network(entry)
            if network is not None:
                if any(a.version == network.version and a in network for a in addresses):
                    return entry
            elif any(fnmatchcase(form, entry) for form in forms):
                return entry
        return None


def deny_list(extra: Sequence[str] = ()) -> DenyList:
    """``DEFAULT_DENY`` plus ``extra`` (``EgressSettings.deny_hosts``); ValueError naming an
    entry with a ``/`` that is not a CIDR range (a fence is not silently dropped)."""
    return DenyList(_entries((*DEFAULT_DENY, *extra), DENY_ENV))


def _entries(raws: Sequence[str], variable: str) -> tuple[str, ...]:
    entries: list[str] = []
    for raw in raws:
        entry = canonical_host(raw) if "/" not in raw else raw.strip().lower()
        if "/" in entry:
            try:
                entry = ipaddress.ip_network(entry, strict=False).compressed
            except ValueError:
                raise ValueError(f"{variable}: {raw.strip()!r} is not an address range such as 10.0.0.0/8") from None
        entries.append(entry)
    return tuple(dict.fromkeys(entries))


@dataclass(frozen=True)
class AllowList:
    """Where networked shell commands may connect (``AGENT_NETWORK_ALLOW``): ``public`` (any
    public address), and host names, globs, addresses and CIDR ranges matched as the deny
    list matches them. An allow list names what may be reached, so it is only ever narrower
    than "anywhere": loopback and private ranges are reached only when listed."""

    public: bool
    hosts: DenyList  # the listed entries, with the deny list's matching

    def allows(self, host: str) -> bool:
        """Whether ``host`` (canonical) is listed by name, glob, address or range."""
        return self.hosts.match(host) is not None

    def allows_address(self, address: str) -> bool:
        """Whether a resolved ``address`` (canonical) is public (when ``public`` is listed) or listed."""
        found = _address(address)
        mapped = found.ipv4_mapped if isinstance(found, ipaddress.IPv6Address) else None
        return (self.public and found is not None and (mapped or found).is_global) or self.allows(address)

    def refusal(self, name: str, address: str | None = None) -> str:
        listed = ", ".join((*(("public",) if self.public else ()), *self.hosts.entries)) or "empty"
        what = f"the host {name}" + (f" resolves to {address}, which" if address and address != name else "")
        return f"{what} is not in {ALLOW_ENV} ({listed}): add it there to reach it"


def allow_list(entries: Sequence[str]) -> AllowList:
    """``EgressSettings.network_allow`` parsed; ValueError naming an entry that is not a range."""
    public = any(entry.strip().lower() == "public" for entry in entries)
    return AllowList(public, DenyList(_entries([e for e in entries if e.strip().lower() != "public"], ALLOW_ENV)))


_deny_list_of = cache(deny_list)  # each tool call builds its fence: parse a list once


async def resolve(host: str, port: int) -> list[str]:
    """The canonical addresses ``host`` resolves to, in the resolver's order; Unreachable if none."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Unreachable(f"the host {host} could not be resolved ({exc})") from None
    found = list(dict.fromkeys(canonical_host(str(info[4][0])) for info in infos))
    if not found:
        raise Unreachable(f"the host {host} could not be resolved")
    return found


@dataclass(frozen=True)
class Egress:
    """One task's fence: whether it has the network, the deny list, and for shell commands
    the allow list (None: the tools' own connections, which have none)."""

    network: bool
    deny: DenyList
    allow: AllowList | None = None

    @classmethod
    def of(cls, network: bool, settings: EgressSettings) -> Egress:
        """A tool call's fence, with the deny list ``settings`` add to the built-in one."""
        return cls(network=network, deny=_deny_list_of(tuple(settings.deny_hosts)))

    @classmethod
    def commands(cls, settings: EgressSettings) -> Egress:
        """The fence of networked shell commands (their proxy: ``tools/shell_network.py``):
        the deny list, then ``AGENT_NETWORK_ALLOW``."""
        return replace(cls.of(True, settings), allow=allow_list(settings.network_allow))

    def refusal(self, host: str) -> str | None:
        """Why ``host`` may not be reached, as written (no DNS), or None."""
        name = canonical_host(host)
        if entry := self.deny.match(name):
            return f"the host {name} is on the deny list ({entry}; see {DENY_ENV})"
        return None if self.network else NO_NETWORK

    async def addresses(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for ``host``, every one it resolves to allowed: Refused
        naming the rule, or Unreachable."""
        if (reason := self.refusal(host)) is not None:
            raise Refused(reason)
        name = canonical_host(host)
        found = [name] if _address(name) is not None else await resolve(name, port)
        for address in found:
            if entry := self.deny.match(address):
                raise Refused(f"the host {name} resolves to {address}, which is on the deny list ({entry})")
        if self.allow is not None and not self.allow.allows(name):  # a listed name may resolve anywhere
            for address in found:
                if not self.allow.allows_address(address):
                    raise Refused(self.allow.refusal(name, address))
        return found


class EgressTransport(httpx.AsyncBaseTransport):
    """Sends each request to an address ``egress`` checked for its host (see the module)."""

    def __init__(self, egress: Egress, verify: ssl.SSLContext | bool = True) -> None:
        self.egress = egress
        # No connection kept: one made to an address for one name (TLS) is never reused for another.
        self._inner = httpx.AsyncHTTPTransport(
            verify=verify, trust_env=False, limits=httpx.Limits(max_keepalive_connections=0)
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        host = url.raw_host.decode("ascii")  # an international name in its IDNA form
        addresses = await self.egress.addresses(host, url.port or _DEFAULT_PORTS.get(url.scheme, 80))
        extensions = dict(request.extensions)
        if url.scheme == "https" and _address(canonical_host(host)) is None:
            extensions["sni_hostname"] = host
        failed: httpx.ConnectError | None = None
        for address in addresses:  # in the resolver's order, as a client would try them
            pinned = httpx.Request(
                request.method, url.copy_with(host=address), headers=request.headers,  # Host: the name
                stream=request.stream, extensions=extensions,
            )  # fmt: skip
            try:
                return await self._inner.handle_async_request(pinned)
            except httpx.ConnectError as exc:  # nothing was sent: the next address
                failed = exc
        assert failed is not None  # addresses is never empty
        raise failed

    async def aclose(self) -> None:
        await self._inner.aclose()


__all__ = [
    "ALLOW_ENV", "DEFAULT_DENY", "DENY_ENV", "NO_NETWORK", "AllowList", "DenyList", "Egress", "EgressTransport",
    "Refused", "Unreachable", "allow_list", "canonical_host", "deny_list", "resolve",
]  # fmt: skip
