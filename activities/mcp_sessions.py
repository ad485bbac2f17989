"""The worker's MCP connections: one per configured server, started on first use, shared by
every task the worker serves, restarted when it dies, stopped when the worker stops.

Each connection lives in a task of its own: the SDK's transports are anyio scopes, entered
and left in one task, while calls come from many activity tasks. A stdio server is started
under a small guard that has the kernel kill it if the worker dies without stopping it
(Linux's parent-death signal), so a SIGKILLed worker leaves no server behind; its own
children get end-of-file on their stdin, and a stop kills its whole process group.

Secret placeholders in ``env`` and ``headers`` are filled in here, and only here.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit

from contracts.mcp import MCP_CONFIG_ENV, McpServerConfig, parse_mcp_config
from core.settings import EgressSettings
from runtime.logs import get_logger
from runtime.secrets import SecretStore
from tools.egress import Egress, Refused, Unreachable

if TYPE_CHECKING:  # the SDK takes over half a second to import: only workers that use it do
    import mcp_types
    from mcp import Client

CONFIG_ENV = MCP_CONFIG_ENV
CONNECT_TIMEOUT_S = 60.0  # start, handshake and first listing
STOP_TIMEOUT_S = 10.0
MAX_PAGES = 100
# Has the kernel SIGKILL the server when the worker's thread that started it dies (prctl
# PR_SET_PDEATHSIG), checks the worker did not die first, then becomes the server.
_GUARD = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None).prctl(1, signal.SIGKILL)\n"
    "if os.getppid() != int(sys.argv[1]): os._exit(1)\n"
    "try: os.execvp(sys.argv[2], sys.argv[2:])\n"
    "except OSError as e: sys.stderr.write(f'cannot run {sys.argv[2]}: {e.strerror}\\n'); os._exit(127)\n"
)


_OWNERS: set[asyncio.Task[None]] = set()


class McpUnavailable(Exception):
    """The server cannot be reached: not configured here, does not start, or died."""


class ServerGone(McpUnavailable):
    """The connection closed while a call was in flight: the call may have partly run."""


class CallTimedOut(Exception):
    """The server did not answer within the call's timeout."""


def load_worker_config(path: Path | None) -> dict[str, McpServerConfig]:
    """The servers of ``AGENT_MCP_CONFIG`` (``McpSettings.config``, a file; None: none);
    ValueError when it cannot be used."""
    if path is None:
        return {}
    try:
        text = path.expanduser().read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"{CONFIG_ENV}: cannot read {path}: {err.strerror or err}") from None
    return parse_mcp_config(text, f"{CONFIG_ENV} {path}")


def listing_digest(tools: list[mcp_types.Tool]) -> str:
    body = [t.model_dump(mode="json", include={"name", "description", "input_schema", "annotations"}) for t in tools]
    return hashlib.sha256(json.dumps(sorted(body, key=lambda t: t["name"]), sort_keys=True).encode()).hexdigest()[:16]


class McpConnection:
    """One live server connection, owned by its own task."""

    def __init__(self, name: str, config: McpServerConfig, secrets: SecretStore, log_dir: Path, egress: Egress) -> None:
        self.name, self.config, self.secrets, self.log_dir, self.egress = name, config, secrets, log_dir, egress
        self._log_start = 0  # where this start's lines begin in the server's log
        self.tools: dict[str, mcp_types.Tool] = {}
        self.digest = ""
        self.changed = False  # the server said its tool list changed since the last listing
        self._client: Client | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None
        self._log = get_logger(component="mcp", server=name)

    @property
    def alive(self) -> bool:
        client = self._client
        if client is None or self._task is None or self._task.done():
            return False
        # The SDK's dispatcher marks itself closed when the transport ends (the server exited).
        dispatcher = getattr(client.session, "_dispatcher", None)
        return not getattr(dispatcher, "_closed", False)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._own(), name=f"mcp-{self.name}")
        _OWNERS.add(self._task)  # the loop keeps only weak references to tasks
        self._task.add_done_callback(_OWNERS.discard)
        try:
            await asyncio.wait_for(self._ready.wait(), CONNECT_TIMEOUT_S)
        except asyncio.CancelledError:  # the call that wanted it was cancelled: the server goes too
            self._stop.set()
            raise
        except TimeoutError:
            await self.stop()
            raise McpUnavailable(f"MCP server {self.name} did not start within {CONNECT_TIMEOUT_S:g} s") from None
        if self._client is None:
            await self.stop()
            said = self._stderr_since_start()  # "Connection closed" alone hides why: a missing program, a crash
            raise McpUnavailable(f"MCP server {self.name} could not be started: {describe_error(self._error)}"
                                 + (f"; its last words on stderr: {said}" if said else ""))

    async def stop(self) -> None:
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT_S)
        except (TimeoutError, Exception):
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def refresh(self) -> None:
        """List the server's tools again (every page)."""
        client = self._require()
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        self.changed = False
        self.tools = {t.name: t for t in tools}
        self.digest = listing_digest(tools)

    async def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> mcp_types.CallToolResult:
        import mcp_types
        from mcp.shared.exceptions import MCPError

        client = self._require()
        try:
            return await client.call_tool(tool, arguments, read_timeout_seconds=timeout_s)
        except MCPError as err:
            if err.code == mcp_types.CONNECTION_CLOSED:
                raise ServerGone(f"the MCP server {self.name} closed the connection during the call") from None
            if err.code == mcp_types.REQUEST_TIMEOUT:
                raise CallTimedOut(f"the MCP server {self.name} did not answer within {timeout_s:g} s") from None
            raise

    def _stderr_since_start(self) -> str:
        """The last line a stdio server wrote to its log since this start (at most 300 characters)."""
        if self.config.type != "stdio":
            return ""
        try:
            with open(self.log_dir / f"{self.name}.log", "rb") as log:
                log.seek(self._log_start)
                lines = [line.strip() for line in log.read().decode("utf-8", "replace").splitlines() if line.strip()]
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""

    def _require(self) -> Client:
        if not self.alive or self._client is None:
            raise McpUnavailable(f"the MCP server {self.name} is not running")
        return self._client

    async def _own(self) -> None:
        from mcp import Client

        errlog: TextIO | None = None
        try:
            async with AsyncExitStack() as stack:
                if self.config.type == "stdio":
                    self.log_dir.mkdir(parents=True, exist_ok=True)
                    errlog = stack.enter_context(open(self.log_dir / f"{self.name}.log", "a", encoding="utf-8"))
                    self._log_start = errlog.tell()
                client = Client(await self._transport(stack, errlog), cache=None, message_handler=self._on_message)
                await stack.enter_async_context(client)
                self._client = client
                await self.refresh()
                listening = asyncio.create_task(self._listen(client))
                self._ready.set()
                self._log.info("mcp server connected", tools=len(self.tools), protocol=client.protocol_version)
                try:
                    await self._stop.wait()
                finally:
                    listening.cancel()
                    await asyncio.gather(listening, return_exceptions=True)
        except BaseException as err:  # noqa: BLE001 - reported to the caller; the task just ends
            self._error = err
            if not self._stop.is_set():
                self._log.warning("mcp server connection ended", error=describe_error(err))
        finally:
            self._client = None
            self._ready.set()

    async def _transport(self, stack: AsyncExitStack, errlog: TextIO | None) -> Any:
        from mcp import StdioServerParameters
        from mcp.client.sse import sse_client
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        cfg, fill = self.config, self.secrets.restore
        if cfg.type == "stdio":
            assert cfg.command is not None and errlog is not None  # checked by the config
            command, args = cfg.command, [fill(a) for a in cfg.args]
            if sys.platform.startswith("linux"):
                command, args = sys.executable, ["-c", _GUARD, str(os.getpid()), cfg.command, *args]
            # The server's environment is its config's ``env`` over the SDK's minimum to start
            # (HOME, LOGNAME, PATH, SHELL, TERM, USER): never the rest of the worker's.
            env = {k: fill(v) for k, v in cfg.env.items()}
            return stdio_client(StdioServerParameters(command=command, args=args, env=env, cwd=cfg.cwd), errlog=errlog)
        assert cfg.url is not None
        await _egress_check(cfg.url, self.egress)
        headers = {k: fill(v) for k, v in cfg.headers.items()}
        if cfg.type == "sse":
            return sse_client(cfg.url, headers=headers)
        http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
        return streamable_http_client(cfg.url, http_client=http)

    async def _listen(self, client: Client) -> None:
        """Servers on the 2026 protocol send list changes on a subscription; older ones send
        ``notifications/tools/list_changed`` (``_on_message``)."""
        caps = client.server_capabilities.tools
        if caps is None or not caps.list_changed:
            return
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self.changed = True
        except Exception as err:  # an older protocol, or the stream ended: notifications remain
            self._log.debug("mcp listen unavailable", error=describe_error(err))

    async def _on_message(self, message: Any) -> None:
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.changed = True


class McpSessions:
    """Every MCP connection of this worker process, keyed by server name and configuration."""

    def __init__(
        self, secrets: SecretStore, worker_servers: dict[str, McpServerConfig] | None = None, *, log_dir: Path,
        egress: EgressSettings,
    ) -> None:
        """``log_dir``: where each server's stderr goes (the worker's ``<data dir>/mcp``);
        ``egress``: the worker's deny list, which a server over HTTP is checked against."""
        self.secrets = secrets
        self.egress = Egress.of(True, egress)
        self.worker_servers = dict(worker_servers or {})
        self.log_dir = log_dir
        self._connections: dict[tuple[str, str], McpConnection] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._closed = False

    def config_for(self, name: str, config: McpServerConfig | None) -> McpServerConfig:
        found = config or self.worker_servers.get(name)
        if found is None:
            raise McpUnavailable(f"the MCP server {name} is not configured on this worker ({CONFIG_ENV})")
        return found

    async def connection(self, name: str, config: McpServerConfig, *, restart: bool = False) -> McpConnection:
        """The server's live connection: started on first use, and again after it died."""
        if self._closed:
            raise McpUnavailable("the worker is stopping")
        key = (name, config.fingerprint())
        async with self._locks.setdefault(key, asyncio.Lock()):
            current = self._connections.get(key)
            if current is not None and current.alive and not restart:
                return current
            if current is not None:
                self._connections.pop(key, None)
                await current.stop()
                get_logger(component="mcp", server=name).info("mcp server restarting")
            fresh = McpConnection(name, config, self.secrets, self.log_dir, self.egress)
            await fresh.start()
            self._connections[key] = fresh
            return fresh

    async def close(self) -> None:
        """Stop every server (the worker is stopping); idempotent."""
        self._closed = True
        connections, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)


async def _egress_check(url: str, egress: Egress) -> None:
    """An HTTP server's host, and every address its name resolves to, against the deny list
    (``tools.egress``), before anything is sent. Redirects stay on this host (the SDK follows
    only those); the SDK's client resolves the name again when it connects, so a DNS answer
    that changes between the two is not seen: the URL is a person's configuration, not the
    model's choice. Whether the task may reach the network is the tool activity's to say."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        await egress.addresses(parts.hostname or "", port)
    except Refused as err:
        raise McpUnavailable(f"the MCP server at {url} is refused: {err}") from None
    except Unreachable as err:
        raise McpUnavailable(f"the MCP server at {url} cannot be reached: {err}") from None


def describe_error(err: BaseException | None) -> str:
    if err is None:
        return "no reason given"
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(describe_error(e) for e in err.exceptions)
    message = getattr(err, "message", None)  # the SDK's MCPError
    if isinstance(message, str) and type(err).__name__ == "MCPError":
        return message
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
