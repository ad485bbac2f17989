"""The providers' network layer on asyncio streams (providers/netio.py), against real sockets:
keep-alive, a server closing an idle connection, timeouts, refused connections, TLS, and
httpx's own client whenever proxies are set."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from core.messages import ChatMessage, LlmRequest, SystemPrompt
from providers.errors import ProviderError
from providers.http import POOL_SHARDS
from providers.netio import AsyncioBackend, lean_client
from providers.openai import OpenAIProvider

REPLY = (b'{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop",'
         b'"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}')
REQUEST = LlmRequest(model="m", system=SystemPrompt(stable="be brief"),
                     messages=[ChatMessage(role="user", content="hi")], tools=[], stream=False)
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "Server"], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> bool:
    """One request's head and body; False at the end of the stream."""
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    if not head:
        return False
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    await reader.readexactly(length)
    return True


def _answer(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                 + str(len(REPLY)).encode() + b"\r\n\r\n" + REPLY)


class Server:
    def __init__(self) -> None:
        self.connections = 0
        self.port = 0
        self.events: asyncio.Queue[str] = asyncio.Queue()  # "closed", "spoke": what the test waits for

    async def next_event(self) -> str:
        event = await asyncio.wait_for(self.events.get(), 10)
        await asyncio.sleep(0.05)  # for the client's side of the socket to see it
        return event


async def _serve(handler: Handler, tls: ssl.SSLContext | None = None) -> AsyncGenerator[Server, None]:
    state = Server()

    async def counted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        try:
            await handler(reader, writer, state)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            state.events.put_nowait("closed")

    server = await asyncio.start_server(counted, "127.0.0.1", 0, ssl=tls)
    state.port = server.sockets[0].getsockname()[1]
    async with server:
        yield state


async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _server: Server) -> None:
    while await _read_request(reader):
        _answer(writer)
        await writer.drain()


async def one_per_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _server: Server) -> None:
    """Answers (without ``Connection: close``) and then closes: an idle keep-alive timeout."""
    if await _read_request(reader):
        _answer(writer)
        await writer.drain()


async def speaks_out_of_turn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server) -> None:
    """Answers, then sends an unasked 408 on the idle connection and keeps it open."""
    if await _read_request(reader):
        _answer(writer)
        await writer.drain()
        await asyncio.sleep(0.02)
        writer.write(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        server.events.put_nowait("spoke")
        await asyncio.sleep(10)  # nothing: the connection stays open after the answer, as a slow server's does


async def never_answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _server: Server) -> None:
    await _read_request(reader)
    await asyncio.sleep(30)  # nothing: the client's own timeout is what ends the request


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Awaitable[Server]]]:
    started: list[AsyncGenerator[Server, None]] = []

    async def start(handler: Handler, tls: ssl.SSLContext | None = None) -> Server:
        it = _serve(handler, tls)
        started.append(it)
        return await anext(it)

    yield start
    for it in started:
        await it.aclose()


def _provider(port: int, timeout_s: float = 600.0) -> OpenAIProvider:
    return OpenAIProvider(f"http://127.0.0.1:{port}/v1", "k", timeout_s=timeout_s)


async def test_the_provider_pools_are_on_asyncio_streams_and_keep_connections(serve) -> None:
    server = await serve(keep_alive)
    provider = _provider(server.port)
    try:
        for _ in range(3):
            results = await asyncio.gather(*(provider.complete(REQUEST) for _ in range(10)))
            assert [r.content for r in results] == ["ok"] * 10
        transports = [t for t in provider._transports if t is not None]
        assert transports, "no request went straight to a lean transport"
        # The module's backend is in place (a newer httpx that builds its pool elsewhere fails here).
        assert all(isinstance(t._pool._network_backend, AsyncioBackend) for t in transports)  # type: ignore[attr-defined]
        # 30 calls, 10 at a time, in turn over the pools: one connection per pool at most (30 without reuse)
        assert server.connections <= POOL_SHARDS, server.connections
    finally:
        await provider.aclose()


async def test_a_connection_the_server_closed_while_idle_is_not_reused(serve) -> None:
    server = await serve(one_per_connection)
    async with lean_client(httpx.Timeout(5.0), ssl.create_default_context(), 4)[0] as client:
        for _ in range(3):
            response = await client.post(f"http://127.0.0.1:{server.port}/v1", json={})
            assert response.status_code == 200 and response.content == REPLY
            assert await server.next_event() == "closed"  # while the connection is idle
    assert server.connections == 3


async def test_an_idle_connection_the_server_spoke_on_is_not_reused(serve) -> None:
    server = await serve(speaks_out_of_turn)
    async with lean_client(httpx.Timeout(5.0), ssl.create_default_context(), 4)[0] as client:
        for _ in range(2):
            response = await client.post(f"http://127.0.0.1:{server.port}/v1", json={})
            assert response.status_code == 200 and response.content == REPLY  # never the stray 408
            assert await server.next_event() == "spoke"
    assert server.connections == 2


async def test_a_server_that_does_not_answer_is_a_timeout(serve) -> None:
    server = await serve(never_answers)
    provider = _provider(server.port, timeout_s=0.3)
    try:
        with pytest.raises(ProviderError) as err:
            await provider.complete(REQUEST)
        assert err.value.kind == "timeout" and err.value.retryable
        assert "ReadTimeout" in str(err.value)
    finally:
        await provider.aclose()


async def test_a_refused_connection_is_a_connection_error(unused_tcp_port: int) -> None:
    provider = _provider(unused_tcp_port)
    try:
        with pytest.raises(ProviderError) as err:
            await provider.complete(REQUEST)
        assert err.value.kind == "connection" and err.value.retryable
        assert "ConnectError" in str(err.value)
    finally:
        await provider.aclose()


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


async def test_tls_is_verified_over_asyncio_streams(serve, tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    server = await serve(keep_alive, server_tls)
    trusting = ssl.create_default_context(cafile=str(cert))
    client, transport = lean_client(httpx.Timeout(5.0), trusting, 2)
    assert transport is not None
    async with client:
        response = await client.post(f"https://localhost:{server.port}/v1", json={})
        assert response.status_code == 200 and response.content == REPLY
        stream = response.extensions["network_stream"]
        assert stream.get_extra_info("ssl_object").version().startswith("TLS")
    # A client that does not trust the certificate refuses the server.
    client, _ = lean_client(httpx.Timeout(5.0), ssl.create_default_context(), 2)
    async with client:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.post(f"https://localhost:{server.port}/v1", json={})


def test_proxies_in_the_environment_keep_httpx_s_own_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    client, transport = lean_client(httpx.Timeout(5.0), ssl.create_default_context(), 2)
    assert transport is None
    assert any(pattern.matches(httpx.URL("https://api.openai.com")) for pattern in client._mounts)
