"""Which URLs the browser may load: the one rule set for ``visit`` and for every request.

The browser runs pages written by strangers, and their scripts, links, redirects and
subresources ask for URLs of their own. One rule set decides them all: ``visit`` calls
``Policy.check`` up front to give the model a clear refusal; the route installed on every
context (``pool.install_routes``) calls ``Policy.refusal`` for every request a page makes;
and the context's proxy (``proxy.PolicyProxy``) applies it again to every connection,
the hops of redirects and WebSockets included, which the route does not see. So a
redirect, a link or a script cannot reach what ``visit`` would refuse.

The rules, in order:

- ``data:``, ``blob:``, ``about:blank`` and ``about:srcdoc`` are content the page already
  holds: allowed.
- ``http``/``https``: never with a user name or password in the URL; never to a host on the
  deny list (cloud metadata endpoints by default, plus ``AGENT_BROWSER_DENY_HOSTS``: host
  names or globs such as ``*.internal``, comma-separated), nor to a host name that resolves
  to a denied address (``169.254.169.254.nip.io``); and only when the task was started with
  ``--network``.
- ``file:`` only for paths that resolve (symlinks followed) inside the task's workspace,
  and never under the paths hidden from tools (``ToolContext.hidden``: the worker's data,
  secrets and store, which may sit inside a workspace that is a source checkout).
- Anything else (``chrome://``, ``view-source:``, ``ftp:``, ``javascript:``) is refused.

Hosts are compared in canonical form: lower case, no trailing dot, IP addresses in the
form Chromium writes them (``0xA9FEA9FE`` and ``2852039166`` are ``169.254.169.254``), and
an IPv4-mapped IPv6 address also as its IPv4 address. The deny list is a fence for the
well-known targets of server-side request forgery, not a firewall: a host whose DNS answer
changes between this check and Chromium's own lookup gets through, so a deployment that
needs a hard boundary puts the worker behind an egress proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import re
import socket
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

DENY_ENV = "AGENT_BROWSER_DENY_HOSTS"
# Cloud metadata endpoints: AWS, Azure, GCP, Oracle (169.254.169.254 and AWS's IPv6 one),
# ECS task metadata, Alibaba, and GCP's names. AGENT_BROWSER_DENY_HOSTS adds to these.
DEFAULT_DENY_HOSTS = (
    "169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200",
    "metadata.google.internal", "metadata.goog",
)  # fmt: skip
ALWAYS_ALLOWED = ("about:blank", "about:srcdoc")
ALLOWED_SCHEMES = ("data", "blob")
DNS_CACHE_S = 60.0
_NUMERIC_HOST = re.compile(r"^(?:0x[0-9a-f]+|[0-9]+)(?:\.(?:0x[0-9a-f]+|[0-9]+)){0,3}$")

NO_NETWORK = (
    "the task has no network access: http and https pages need a task started with --network "
    "(file:// pages inside the workspace open without it)"
)
CREDENTIALS = "URLs with a user name or password are refused; remove the credentials"


def canonical_host(host: str) -> str:
    """``host`` as Chromium writes it: lower case, no brackets or trailing dot, IPs canonical."""
    host = host.strip().strip("[]").rstrip(".").lower()
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


def _forms(host: str) -> tuple[str, ...]:
    """The names a host is checked under: itself, and the IPv4 address an IPv6 one maps."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return (host,)
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return (host, mapped.compressed) if mapped else (host,)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def deny_hosts(environ: dict[str, str] | os._Environ[str] = os.environ) -> tuple[str, ...]:
    """The built-in deny list plus ``AGENT_BROWSER_DENY_HOSTS``, in canonical form."""
    extra = [part for part in environ.get(DENY_ENV, "").split(",") if part.strip()]
    return tuple(dict.fromkeys(canonical_host(host) for host in (*DEFAULT_DENY_HOSTS, *extra)))


# host -> (when looked up, the addresses it resolved to)
_resolved: dict[str, tuple[float, frozenset[str]]] = {}


async def _addresses(host: str) -> frozenset[str]:
    """The addresses ``host`` resolves to (cached a minute; empty when it does not resolve)."""
    now = time.monotonic()
    cached = _resolved.get(host)
    if cached is not None and now - cached[0] < DNS_CACHE_S:
        return cached[1]
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        found: frozenset[str] = frozenset()  # Chromium will fail the same way
    else:
        found = frozenset(canonical_host(str(info[4][0]).split("%", 1)[0]) for info in infos)
    _resolved[host] = (now, found)
    return found


@dataclass(frozen=True)
class Policy:
    """What one task's browser may load: read from its ``ToolContext`` on every call."""

    network: bool
    workspace: Path
    deny: tuple[str, ...] = DEFAULT_DENY_HOSTS
    hidden: tuple[Path, ...] = ()

    @classmethod
    def of(cls, network: bool, workspace: Path, hidden: tuple[Path, ...] = ()) -> Policy:
        return cls(network=network, workspace=workspace, deny=deny_hosts(), hidden=hidden)

    def refusal(self, url: str) -> str | None:
        """Why ``url`` may not be loaded (one clause naming the rule), or None. No DNS."""
        if url in ALWAYS_ALLOWED:
            return None
        try:
            parts = urlsplit(url)
            host = parts.hostname or ""
            has_credentials = parts.username is not None or parts.password is not None
        except ValueError as exc:
            return f"{url!r} is not a valid URL ({exc})"
        scheme = parts.scheme.lower()
        if scheme in ALLOWED_SCHEMES:
            return None
        if scheme in ("http", "https"):
            if has_credentials:
                return CREDENTIALS
            if not host:
                return f"the URL {url!r} has no host"
            if denied := self.denied(canonical_host(host)):
                return f"the host {host} is on the browser's deny list ({denied}; see {DENY_ENV})"
            return None if self.network else NO_NETWORK
        if scheme == "file":
            return self._file_refusal(url, parts.netloc, parts.path)
        shown = url if len(url) <= 80 else url[:77] + "..."
        return f"only http, https and file URLs (inside the workspace) can be opened, not {shown!r}"

    async def check(self, url: str) -> str | None:
        """``refusal``, and for a host name, whether it resolves to a denied address."""
        reason = self.refusal(url)
        if reason is not None:
            return reason
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https"):
            return None
        host = canonical_host(parts.hostname or "")
        if _is_ip(host) or not any(_is_ip(entry) for entry in self.deny):
            return None
        for address in sorted(await _addresses(host)):
            if denied := self.denied(address):
                return f"the host {host} resolves to {address}, which is on the browser's deny list ({denied})"
        return None

    def denied(self, host: str) -> str | None:
        """The deny-list entry ``host`` (canonical: see ``canonical_host``) matches, or None."""
        for form in _forms(host):
            for pattern in self.deny:
                if fnmatchcase(form, pattern):
                    return pattern
        return None

    def _file_refusal(self, url: str, netloc: str, path: str) -> str | None:
        if netloc not in ("", "localhost"):
            return f"file URLs on another host are refused ({url!r})"
        try:
            root = self.workspace.resolve()
            target = Path(url2pathname(unquote(path))).resolve()
        except (OSError, RuntimeError, ValueError) as exc:
            return f"the file URL {url!r} cannot be resolved ({exc})"
        if target != root and root not in target.parents:
            return f"{url} is outside the workspace ({root}): only files inside it can be opened"
        for hidden in self.hidden:
            with contextlib.suppress(OSError, RuntimeError):
                secret = hidden.resolve()
                if target == secret or secret in target.parents:
                    return f"{url} is hidden from the tools (the worker's own data)"
        return None


_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_HOST_PORT = re.compile(r"^[a-zA-Z0-9.-]+:\d+(?:[/?#]|$)")  # localhost:8000/x has no scheme
_LOOPBACK = ("localhost", "127.0.0.1", "[::1]")


def workspace_url(target: str, workspace: Path) -> str:
    """What ``visit`` opens for ``target``: a URL as it is; the path of something in the
    workspace (or any path starting with ``/``, ``./`` or ``../``) as its file URL, symlinks
    resolved (the policy then says whether it is inside); anything else as a web address:
    ``example.com`` is https, ``localhost:8000`` http."""
    target = target.strip()
    if _SCHEME.match(target) and not _HOST_PORT.match(target):
        return target
    candidate = workspace / target  # an absolute target replaces the workspace
    try:
        if target.startswith(("/", "./", "../")) or candidate.exists():
            return candidate.resolve().as_uri()
    except (OSError, ValueError):
        pass
    host = re.split(r"[:/?#]", target, maxsplit=1)[0].lower()
    return f"{'http' if host in _LOOPBACK or target.startswith('[::1]') else 'https'}://{target}"


__all__ = ["DEFAULT_DENY_HOSTS", "DENY_ENV", "Policy", "canonical_host", "deny_hosts", "workspace_url"]
