"""Which URLs the browser may load: the one rule set for ``visit`` and for every request.

The browser runs pages written by strangers, and their scripts, links, redirects and
subresources ask for URLs of their own. One rule set decides them all: ``visit`` calls
``Policy.check`` up front to give the model a clear refusal; the route installed on every
context (``guard.install_routes``) calls ``Policy.refusal`` for every request a page makes;
and the context's proxy (``tools.egress_proxy.PolicyProxy``) applies it again to every connection,
the hops of redirects and WebSockets included, which the route does not see. So a
redirect, a link or a script cannot reach what ``visit`` would refuse.

The rules, in order:

- ``data:``, ``blob:``, ``about:blank`` and ``about:srcdoc`` are content the page already
  holds: allowed.
- ``http``/``https``: never with a user name or password in the URL; otherwise the one
  egress policy of every tool (``tools.egress``): only in a task started with ``--network``,
  never to a host on the deny list (cloud metadata endpoints and link-local ranges, plus
  ``AGENT_DENY_HOSTS``), and (``check``, and the proxy for every connection) never to a host
  name that resolves to a denied address (``169.254.169.254.nip.io``).
- ``file:`` only for paths that resolve (symlinks followed) inside the task's workspace,
  and never under the paths hidden from tools (``ToolContext.hidden``: the worker's data,
  secrets and store, which may sit inside a workspace that is a source checkout).
- Anything else (``chrome://``, ``view-source:``, ``ftp:``, ``javascript:``) is refused.

Hosts are compared in the egress policy's canonical form. ``check`` resolves a name only to
refuse early, in words the model reads; what is connected to is the proxy's decision: Chromium
hands it every http and https host by name, and it resolves the name, checks every address
and connects to one it checked, so a DNS answer that changes after a check is never used.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from tools.egress import NO_NETWORK as NO_EGRESS
from tools.egress import Egress, Refused, Unreachable

if TYPE_CHECKING:
    from tools.base import ToolContext

ALWAYS_ALLOWED = ("about:blank", "about:srcdoc")
ALLOWED_SCHEMES = ("data", "blob")
NO_NETWORK = f"{NO_EGRESS} (file:// pages inside the workspace open without it)"
CREDENTIALS = "URLs with a user name or password are refused; remove the credentials"


@dataclass(frozen=True)
class Policy:
    """What one task's browser may load: read from its ``ToolContext`` on every call."""

    workspace: Path
    egress: Egress
    hidden: tuple[Path, ...] = ()

    @classmethod
    def of(cls, ctx: ToolContext) -> Policy:
        """A tool call's: its task's network, workspace and hidden paths, its worker's deny list."""
        return cls(workspace=ctx.workspace, egress=Egress.of(ctx.network, ctx.settings.egress), hidden=ctx.hidden)

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
            reason = self.egress.refusal(host)
            return NO_NETWORK if reason == NO_EGRESS else reason
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
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            return None
        try:
            await self.egress.addresses(parts.hostname or "", parts.port or (443 if scheme == "https" else 80))
        except Refused as exc:
            return str(exc)
        except (Unreachable, ValueError):  # Chromium will fail the same way
            return None
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


__all__ = ["NO_NETWORK", "Policy", "workspace_url"]
