"""Staying connected to a Matrix homeserver. What the adapter keeps between runs in the
gateway's state directory: the login a password made (access token and device, so a restarted
gateway is the same device and its transaction ids still count) and the sync token (where the
next sync starts).

Both are keyed by homeserver URL and user id, because both mean something only to the server
that gave them: a table pointed at another homeserver finds nothing saved, logs in and starts
from now, instead of sending one server's token to another. A server that forgot us (reset,
token revoked) answers 401 (``refused``): the adapter drops both (``forget``) and logs in again.
A sync or a login that fails is tried again with backoff (``Retrying``), logged as what it is
once, not at every try; nio's own line for each (a schema warning, "Timed out") is dropped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from pathlib import Path

import structlog
from nio import ErrorResponse

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
