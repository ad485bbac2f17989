"""Who may use ``mcp-serve``, and what they may ask of it.

Over HTTP anyone who can reach the port could start tasks that run commands on this host,
so every request carries a bearer token: ``AGENT_MCP_TOKEN``, or one generated into the
data directory (mode 0600) and kept there, so a client configured once goes on working
after a restart. ``BearerGuard`` answers 401 before the MCP server sees the request. Over
stdio the client started the process and needs no token.

Either way a client chooses only among what the operator started the server with: a
workspace under the server's ``--workspace``, and ``approval: "never"`` only if the server
was started with it (``task_request``).
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli.tasks import UserError
from contracts.task import ApprovalMode

TOKEN_FILE = "mcp-token"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class ServeToken:
    value: str = field(repr=False)
    file: Path | None  # None: AGENT_MCP_TOKEN's

    def notice(self, url: str) -> str:
        """The line printed at start, for the operator to copy into the client."""
        where = f"kept in {self.file}" if self.file else "AGENT_MCP_TOKEN"
        shown = self.value if self.file else "<AGENT_MCP_TOKEN>"
        return f"mcp-serve: {url}; clients send the header 'Authorization: Bearer {shown}' (token {where})"


def serve_token(configured: str, data: Path) -> ServeToken:
    """``configured`` (AGENT_MCP_TOKEN) if set; else the token kept in ``data``, made on first use."""
    if configured:
        return ServeToken(configured, None)
    path = data / TOKEN_FILE
    if path.exists():
        os.chmod(path, 0o600)  # a copy restored with looser modes is tightened
        if token := path.read_text(encoding="utf-8").strip():
            return ServeToken(token, path)
        path.unlink()  # empty: the process that made it died before writing
    token = secrets.token_urlsafe(32)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as out:
        out.write(token + "\n")
    return ServeToken(token, path)


class BearerGuard:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer <token>`` gets 401
    and never reaches ``app``. The comparison takes the same time wherever the tokens differ.
    Lifespan events pass through: the MCP app starts its session manager on them."""

    def __init__(self, app: App, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or self._authorized(scope):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # policy violation
        else:
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"text/plain; charset=utf-8"), (b"www-authenticate", b'Bearer realm="mcp-serve"')]})
            await send({"type": "http.response.body", "body": b"401: send Authorization: Bearer <token>\n"})

    def _authorized(self, scope: Scope) -> bool:
        given = [value for name, value in scope.get("headers", ()) if name.lower() == b"authorization"]
        return len(given) == 1 and hmac.compare_digest(given[0], self.expected)


def task_request(workspace: str | None, approval: str | None, root: Path, server_approval: str) -> tuple[Path, str]:
    """The workspace (resolved: symlinks, ``..``; relative ones from ``root``) and approval
    mode a client asked for, if the server allows them: the workspace under ``root``, and
    ``never`` only when the server runs with it. ``task_input`` refuses ``/`` and the data
    directory for every command, so they are not repeated here."""
    path = (root / (workspace or ".")).expanduser().resolve()
    if not path.is_relative_to(root):
        raise UserError(f"workspace {path} is outside {root}, where this server's tasks may work "
                      "(mcp-serve --workspace sets it)")
    mode = approval or server_approval
    choices = [m.value for m in ApprovalMode]
    if mode not in choices:
        raise UserError(f"approval {mode!r} is not one of {', '.join(choices)}")
    if mode == ApprovalMode.NEVER.value and server_approval != mode:
        raise UserError('approval "never" runs every tool call unasked: only a server started with '
                      "--approval never hands it out")
    return path, mode
