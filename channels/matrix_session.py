"""Staying connected to a Matrix homeserver: the ``[matrix]`` table's keys (``MatrixSettings``),
the sync and the history a cut-short sync left out, and what the adapter keeps between runs in the
gateway's state directory: the login a password made (access token and device, so a restarted
gateway is the same device and its transaction ids still count) and the sync token (where the
next sync starts).

Both are keyed by homeserver URL and user id, because both mean something only to the server
that gave them: a table pointed at another homeserver finds nothing saved, logs in and starts
from now, instead of sending one server's token to another. A server that forgot us (reset,
token revoked) answers 401 (``refused``): the adapter drops both (``forget``) and logs in again.
A sync or a login that fails is tried again with backoff (``Retrying``), logged as what it is
once, not at every try; nio's own line for each (a schema warning, "Timed out") is dropped.

A sync batch the homeserver cut short (``limited``: Synapse sends at most 10 events a room
unless asked for more, so a burst while the gateway hands over a large image is more) comes
with what it left out, fetched from the room's history (``with_gap``), so no message is skipped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import structlog
from aiohttp import ClientError
from nio import AsyncClient, ErrorResponse, RoomMessagesResponse, SyncResponse
from pydantic import BaseModel, ConfigDict

_R = TypeVar("_R")

GAP_PAGE = 100  # events a page when fetching what a limited sync batch left out
PAUSE_S = 1.0  # after a failed try; doubled after each further failure, up to the max
PAUSE_MAX_S = 30.0

_log = structlog.get_logger(__name__)


class _ReportedByTheAdapter(logging.Filter):
    """nio logs every error response as a failed check of the success schema ("Error validating
    response: 'next_batch' is a required property") and every try at an unreachable server as
    "Timed out"; the adapter logs the error itself, as what it is, once (``Retrying``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(("Error validating response", "Timed out, sleeping"))


for _nio_log in ("nio.responses", "nio.client.async_client"):  # a filter holds for its own logger only
    logging.getLogger(_nio_log).addFilter(_ReportedByTheAdapter())


class MatrixSettings(BaseModel):
    """The ``[matrix]`` table's own keys (``allowed_users``, ``approvers``: channels/config.py);
    a key not here, or of the wrong type, is refused by name."""

    model_config = ConfigDict(extra="forbid")

    homeserver: str  # https://matrix.example.org
    user_id: str  # the bot's account: @agent:example.org
    password: str = ""  # logs in, and again when the homeserver forgets the login
    access_token: str = ""  # instead of a password (not renewed when refused)
    device_id: str = ""  # the access token's device


class LoginRefused(Exception):
    """The homeserver no longer accepts the access token."""


def refused(response: object) -> bool:
    """Whether ``response`` is the homeserver refusing the access token: HTTP 401
    (``M_UNKNOWN_TOKEN`` after a reset or a revoked login, ``M_MISSING_TOKEN``)."""
    if not isinstance(response, ErrorResponse):
        return False
    status = getattr(response.transport_response, "status", None)
    return status == 401 or response.status_code in ("M_UNKNOWN_TOKEN", "M_MISSING_TOKEN")


class MatrixState:
    def __init__(self, state_dir: Path, homeserver: str, user_id: str) -> None:
        key = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{homeserver.rstrip('/')}-{user_id}")
        self.login_file = state_dir / f"{key}.login"
        self.sync_file = state_dir / f"{key}.sync"
        state_dir.mkdir(parents=True, exist_ok=True)

    def login(self) -> tuple[str, str] | None:
        """The saved access token and device id, if a password login left them."""
        if not self.login_file.exists():
            return None
        saved = json.loads(self.login_file.read_text())
        return saved["access_token"], saved.get("device_id", "")

    def save_login(self, access_token: str, device_id: str) -> None:
        _write_private(self.login_file, json.dumps({"access_token": access_token, "device_id": device_id}))

    def sync_token(self) -> str | None:
        return self.sync_file.read_text().strip() or None if self.sync_file.exists() else None

    def save_sync_token(self, token: str) -> str:
        _write_private(self.sync_file, token)
        return token

    def forget(self) -> None:
        """The server no longer knows this login, and so neither where its sync had got to."""
        self.login_file.unlink(missing_ok=True)
        self.sync_file.unlink(missing_ok=True)


class Retrying:
    """The pauses between tries of one thing that fails (a sync, a login), growing while it
    lasts, and a warning when its error is new rather than at every try: an unreachable
    server, then a 502, are two lines however long the outage."""

    def __init__(self, what: str, channel: str) -> None:
        self.what, self.channel = what, channel
        self.pause, self.last = PAUSE_S, ""

    async def after(self, failure: object) -> None:
        error = str(failure) if isinstance(failure, ErrorResponse) else f"{type(failure).__name__}: {failure}"
        if error != self.last:
            _log.warning(f"matrix {self.what} failed; trying again, less often while it lasts",
                         channel=self.channel, error=error)
        self.last = error
        await asyncio.sleep(self.pause)
        self.pause = min(self.pause * 2, PAUSE_MAX_S)

    def done(self) -> None:
        if self.last:
            _log.info(f"matrix {self.what} works again", channel=self.channel)


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole (a crash leaves the old file or the new one), owner-only."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


async def sync(client: AsyncClient, token: str | None, timeout_ms: int, channel: str) -> SyncResponse:
    """The next batch after ``token`` (None: the first, with the rooms' state), tried again
    while the homeserver fails; ``LoginRefused`` when it refuses the access token."""
    return await retried(lambda: client.sync(timeout=timeout_ms, since=token, full_state=token is None),
                          SyncResponse, "sync", channel)


async def with_gap(client: AsyncClient, room_id: str, prev_batch: str | None, since: str, batch: list[Any],
                   channel: str) -> list[Any]:
    """A limited batch's events after those it left out: the room's history between ``since``
    and the batch (``/messages`` back to ``since``), oldest first."""
    earlier: list[Any] = []
    start = prev_batch
    while start:
        page = await retried(lambda at=start: client.room_messages(room_id, start=at, end=since, limit=GAP_PAGE),
                              RoomMessagesResponse, "fetch of a room's history", channel)
        earlier += page.chunk
        if not page.chunk or not page.end or page.end == start:
            break
        start = page.end
    known = {getattr(e, "event_id", None) for e in batch}
    earlier = [e for e in reversed(earlier) if getattr(e, "event_id", None) not in known]
    _log.info("matrix sync was limited: fetched the events it left out", channel=channel, room=room_id,
              fetched=len(earlier))
    return earlier + batch


async def retried(call: Callable[[], Awaitable[object]], want: type[_R], what: str, channel: str, *,
                  refusals: bool = True) -> _R:
    """``call``'s answer of type ``want``, tried again with backoff while it is anything else;
    ``refusals``: a refused access token raises ``LoginRefused`` instead (not for a login)."""
    retrying = Retrying(what, channel)
    while True:
        try:
            response = await call()
        except (ClientError, TimeoutError) as err:
            response = err
        if isinstance(response, want):
            retrying.done()
            return response
        if refusals and refused(response):
            raise LoginRefused(str(response))
        await retrying.after(response)
