"""The sandbox in tests: bubblewrap is a Debian package (``.ci/run`` installs it).

On a machine without it, the suite runs commands unsandboxed (``AGENT_SANDBOX=off``, said
in one line) and the tests of the sandbox itself are skipped with the line that says how to
install it, except under ``AGENT_TEST_REQUIRE_SANDBOX=1`` (set by ``.ci/run``), where they
fail instead: CI never hides a missing sandbox.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import NoReturn

import pytest

from core.settings import SandboxSettings
from tools import control_paths, sandbox
from tools.base import ToolContext, ToolOutcome
from tools.shell import ShellArgs, run_shell

REQUIRE_ENV = "AGENT_TEST_REQUIRE_SANDBOX"


def probe() -> sandbox.SandboxStatus:
    return sandbox.probe(SandboxSettings(mode="auto"))


def skip(reason: str) -> NoReturn:
    """Skip a sandbox test this host cannot run (no pids cgroup, no rsync, no writable /root);
    under ``AGENT_TEST_REQUIRE_SANDBOX`` (CI, which provides them) a failure instead, so a
    skip there is never silent."""
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{REQUIRE_ENV} is set but {reason}")
    pytest.skip(reason)


def require(monkeypatch: pytest.MonkeyPatch) -> sandbox.SandboxStatus:
    """The sandbox, chosen for the settings the test builds after this (``tests/configured.py``);
    skipped (or failed in CI) without it."""
    status = probe()
    if not status.active:
        message = f"no sandbox: {status.problem}; {sandbox.INSTALL_HINT}"
        skip(message)
    monkeypatch.setenv("AGENT_SANDBOX", "auto")
    return status


def unsandboxed(monkeypatch: pytest.MonkeyPatch) -> sandbox.SandboxStatus:
    """No sandbox, for the settings the test builds after this."""
    monkeypatch.setenv("AGENT_SANDBOX", "off")
    return sandbox.probe(SandboxSettings(mode="off"))


async def run(ctx: ToolContext, command: str, timeout_s: int = 60) -> ToolOutcome:
    """The shell tool's handler on ``command``, as the tool activity calls it, once its
    placeholders are removed (the handler returns before: ``control_paths.settle``)."""
    result = await run_shell(ShellArgs(command=command, timeout_s=timeout_s), ctx)
    control_paths.settle()
    return result


class Gate:
    """A fifo a command's background child reads (``cat gate``): a barrier on that child, where
    a sleep followed by "the file it would have written is not there" only hopes it is dead.
    Once the child has it open the test holds the write end, so the child never sees its end;
    a write then fails (EPIPE) exactly when no process reads any more."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path, self.fd = path, -1

    def reading(self) -> bool:
        """Whether a process has the fifo open for reading (from then on it is held)."""
        if self.fd < 0:
            try:
                self.fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as err:
                if err.errno == errno.ENXIO:
                    return False
                raise
        return True

    def read_by_none(self) -> bool:
        """Whether every process that read it is gone (``reading`` was seen first)."""
        try:
            os.write(self.fd, b"\n")
        except BrokenPipeError:
            return True
        return False

    def close(self) -> None:
        """The write end let go: a reader still there sees its end."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
