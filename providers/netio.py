"""The providers' connections on asyncio's own streams.

httpx's default network layer on asyncio (anyio through httpcore) costs a worker with many
model calls in flight a good part of its CPU; httpcore takes its network layer as a
parameter, and this one is asyncio's streams, with the same errors and timeouts.
``lean_client`` builds an ``httpx.AsyncClient`` on it, unless proxies are set in the
environment or the pinned httpx no longer builds its pool where this module expects it
(then httpx's own: slower, never wrong). Why and how much: docs/providers.md.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
from collections.abc import Coroutine
from typing import Any

import httpcore
import httpx


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection: a StreamReader and StreamWriter, errors as httpcore names them."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(str(exc) or "timed out reading") from exc
        except OSError as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            self._writer.write(buffer)
            async with asyncio.timeout(timeout):
                await self._writer.drain()
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(str(exc) or "timed out writing") from exc
        except (OSError, RuntimeError) as exc:  # RuntimeError: a transport already closed
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        self._writer.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError as exc:
            self._writer.close()
            raise httpcore.ConnectTimeout(str(exc) or "timed out in the TLS handshake") from exc
        except (OSError, ssl.SSLError) as exc:  # ssl.SSLError is an OSError; named for the reader
            self._writer.close()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # Asked of an idle connection: anything readable there is the server closing it or
            # talking out of turn (a 408 before it closes). asyncio reads as data comes, so the
            # reader holds it already; its buffer has no public name (a missing one reads empty).
            reader = self._reader
            unread = getattr(reader, "_buffer", b"")
            return bool(unread) or reader.at_eof() or reader.exception() is not None or self._writer.is_closing()
        if info == "ssl_object":
            return self._writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info == "socket":
            return self._writer.get_extra_info("socket")
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network layer on asyncio streams (TCP and Unix sockets)."""

    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        local = (local_address, 0) if local_address else None
        return await _connect(asyncio.open_connection(host, port, local_addr=local), f"{host}:{port}",
                              timeout, socket_options)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.AsyncNetworkStream:
        return await _connect(asyncio.open_unix_connection(path), path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def _connect(
    opening: Coroutine[Any, Any, tuple[asyncio.StreamReader, asyncio.StreamWriter]],
    where: str, timeout: float | None, options: Any,
) -> AsyncioStream:
    """A connection opened within ``timeout``, its errors as httpcore names them."""
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await opening
    except TimeoutError as exc:
        raise httpcore.ConnectTimeout(str(exc) or f"timed out connecting to {where}") from exc
    except OSError as exc:
        raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
    sock = writer.get_extra_info("socket")
    for option in options or ():
        sock.setsockopt(*option)
    return AsyncioStream(reader, writer)


def lean_client(
    timeout: httpx.Timeout, verify: ssl.SSLContext, connections: int
) -> tuple[httpx.AsyncClient, httpx.AsyncHTTPTransport | None]:
    """A client of at most ``connections`` connections (all kept alive while idle), and its
    transport when it is this module's (the caller may then send through it directly, past
    the client's layers of auth, cookies and redirects, none of which a provider uses)."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    if urllib.request.getproxies():  # httpx's client reads the same variables; keep its handling
        return httpx.AsyncClient(timeout=timeout, verify=verify, limits=limits), None
    transport = httpx.AsyncHTTPTransport(verify=verify, limits=limits)
    if not isinstance(getattr(transport, "_pool", None), httpcore.AsyncConnectionPool):
        return httpx.AsyncClient(timeout=timeout, transport=transport), None
    transport._pool = httpcore.AsyncConnectionPool(  # the same pool httpx builds, on asyncio streams
        ssl_context=verify, max_connections=connections, max_keepalive_connections=connections,
        keepalive_expiry=limits.keepalive_expiry, network_backend=AsyncioBackend(),
    )
    return httpx.AsyncClient(timeout=timeout, transport=transport), transport
