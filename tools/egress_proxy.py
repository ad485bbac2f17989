"""The policy proxy: every connection a task's browser or a networked shell command opens
goes through it and is checked.

Shell commands run with no network of their own; the worker's proxy (a listener per command
on a Unix socket, ``tools/shell_network.py``) is their only way out, under ``HostRules``:
the egress policy with ``AGENT_NETWORK_ALLOW``. For the browser:

playwright's route (``guard.install_routes``) sees the first request of everything a page
loads, but not the hops of a redirect: playwright lets Chromium follow those by itself, so
a page on an allowed host that answers ``302 Location: http://169.254.169.254/`` would
reach the metadata endpoint. Nor does the route see WebSocket connections. So each
context also gets its own HTTP proxy on 127.0.0.1 (playwright's per-context ``proxy``
option; playwright makes Chromium send loopback traffic through it too), and Chromium
opens every http and https connection through it:

- ``CONNECT host:port`` (https, WebSockets): the host is checked against the task's
  ``Policy``, resolved here, every address it resolves to checked against the deny list,
  and the tunnel opened to the address that was checked: a DNS answer that changes
  between the check and the connection (DNS rebinding) changes nothing. A refusal is
  ``403``, which the page sees as a network error.
- ``GET http://host/path`` (plain http, redirect hops included): the same checks, then the
  request is sent on in origin form with ``Connection: close`` (one request per
  connection, so a second request on the same connection can never reach a host that was
  not checked). A refusal closes the connection without an answer: a network error for the
  page, not a page of its own. For a shell command (``answer_refusals``) it is the same
  ``403`` as for a tunnel, both with one line saying why, which ``curl`` shows.

Refusals go to the owner's notes, so the model hears of them in the next result. Nothing is
decrypted: https stays end to end between Chromium and the site.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from tools.egress import Egress, Refused, Unreachable

log = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024  # the longest request or response head read
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 10.0
CHUNK = 64 * 1024
_HOP_HEADERS = ("connection", "proxy-connection", "keep-alive", "proxy-authorization")


class Rules(Protocol):
    """What a URL may reach before DNS (``refusal``), and the egress policy that resolves it."""

    @property
    def egress(self) -> Egress: ...

    def refusal(self, url: str) -> str | None: ...


@dataclass(frozen=True)
class HostRules:
    """No rules of their own on URLs: the egress policy's, on the host (shell commands)."""

    egress: Egress

    def refusal(self, url: str) -> str | None:
        return self.egress.refusal(urlsplit(url).hostname or "")


class Owner(Protocol):
    """Whose connections these are: the policy to apply and where to report refusals."""

    @property
    def policy(self) -> Rules: ...

    def note(self, text: str) -> None: ...


class PolicyProxy:
    """One context's (or command's) proxy (see the module docstring); ``start`` gives its URL,
    ``start_unix`` listens on a Unix socket instead."""

    def __init__(self, owner: Owner | None = None, *, answer_refusals: bool = False) -> None:
        self.owner = owner  # set before the context's first request
        self.answer_refusals = answer_refusals  # a refused plain request gets a 403 too
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=HEAD_LIMIT)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def start_unix(self, path: Path) -> None:
        self._server = await asyncio.start_unix_server(self._serve, str(path), limit=HEAD_LIMIT)

    def close(self) -> None:
        """Stop listening and cut every open connection. Safe to call twice."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            await self._handle(reader, writer)
        except (OSError, EOFError, ValueError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # a connection that ended early or spoke nonsense: nothing to answer
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        line, *headers = head[:-4].decode("latin-1").split("\r\n")
        method, target, version = line.split(" ", 2)
        tunnel = method.upper() == "CONNECT"
        if tunnel:
            host, port = _host_port(target)
            url = f"{'http' if port == 80 else 'https'}://{_bracketed(host)}:{port}/"
            shown = target
        else:
            parts = urlsplit(target)
            if parts.scheme != "http" or not parts.hostname:
                return
            host, port, url, shown = parts.hostname, parts.port or 80, target, target
        try:
            address = await self._address(url, host, port)
            upstream_reader, upstream = await asyncio.wait_for(
                asyncio.open_connection(address, port, limit=HEAD_LIMIT), CONNECT_TIMEOUT_S
            )
        except (Refused, Unreachable, OSError, TimeoutError) as exc:
            why = str(exc) if isinstance(exc, Refused | Unreachable) else f"could not connect ({exc or type(exc).__name__})"
            what = ("refused a connection to " if tunnel else "refused ") if isinstance(exc, Refused) else "could not reach "
            self._note(f"{what}{shown[:200]}: {why}")
            if tunnel or self.answer_refusals:
                line = f"{why}\n".encode()
                writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n"
                             b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(line), line))
                await writer.drain()
            return
        self._writers.add(upstream)
        try:
            if tunnel:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await _relay(reader, writer, upstream_reader, upstream)
                return
            upstream.write(_origin_form(method, target, version, headers))
            await upstream.drain()
            # The request's body (a form's POST) goes on while the answer is awaited: the
            # server answers only once it has the body.
            body = asyncio.ensure_future(_copy(reader, upstream))
            try:
                writer.write(_closing(await upstream_reader.readuntil(b"\r\n\r\n")))
                await _copy(upstream_reader, writer)
            finally:
                body.cancel()
                await asyncio.gather(body, return_exceptions=True)
        finally:
            self._writers.discard(upstream)
            upstream.close()

    async def _address(self, url: str, host: str, port: int) -> str:
        """The address to connect to, after the policy allowed the URL and every address the
        host resolves to; raises ``Refused`` (or ``Unreachable``)."""
        policy = self._policy()
        if (reason := policy.refusal(url)) is not None:
            raise Refused(reason)
        return (await policy.egress.addresses(host, port))[0]

    def _policy(self) -> Rules:
        if self.owner is None:
            raise Refused("the browser context is not ready")
        return self.owner.policy

    def _note(self, text: str) -> None:
        if self.owner is not None:
            self.owner.note(text)


def _host_port(target: str) -> tuple[str, int]:
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"bad CONNECT target {target!r}")
    return host.strip("[]"), int(port)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _origin_form(method: str, target: str, version: str, headers: list[str]) -> bytes:
    """The request as the server expects it: path only, no proxy headers, one request."""
    parts = urlsplit(target)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kept = [h for h in headers if h.split(":", 1)[0].strip().lower() not in _HOP_HEADERS]
    return "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""]).encode("latin-1")


def _closing(head: bytes) -> bytes:
    """A response head that tells Chromium not to send another request on this connection."""
    lines = head[:-4].split(b"\r\n")
    kept = [lines[0], *(h for h in lines[1:] if h.split(b":", 1)[0].strip().lower() not in (b"connection", b"keep-alive"))]
    return b"\r\n".join([*kept, b"Connection: close", b"", b""])


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    while data := await source.read(CHUNK):
        sink.write(data)
        await sink.drain()


async def _relay(
    client_reader: asyncio.StreamReader, client: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader, upstream: asyncio.StreamWriter,
) -> None:  # fmt: skip
    """Copy bytes both ways until either side closes, then close both."""
    copies = [asyncio.ensure_future(_copy(client_reader, upstream)), asyncio.ensure_future(_copy(upstream_reader, client))]
    try:
        await asyncio.wait(copies, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for each in copies:
            each.cancel()
        await asyncio.gather(*copies, return_exceptions=True)


__all__ = ["HostRules", "Owner", "PolicyProxy", "Rules"]
