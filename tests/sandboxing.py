"""The sandbox in tests: bubblewrap is a Debian package (``.ci/run`` installs it).

On a machine without it, the suite runs commands unsandboxed (``AGENT_SANDBOX=off``, said
in one line) and the tests of the sandbox itself are skipped with the line that says how to
install it, except under ``AGENT_TEST_REQUIRE_SANDBOX=1`` (set by ``.ci/run``), where they
fail instead: CI never hides a missing sandbox.
"""

from __future__ import annotations

import os

import pytest

from core.settings import SandboxSettings
from tools import sandbox
from tools.base import ToolContext, ToolOutcome
from tools.shell import ShellArgs, run_shell

REQUIRE_ENV = "AGENT_TEST_REQUIRE_SANDBOX"


def probe() -> sandbox.SandboxStatus:
    return sandbox.probe(SandboxSettings(mode="auto"))


def require(monkeypatch: pytest.MonkeyPatch) -> sandbox.SandboxStatus:
    """The sandbox, chosen for the settings the test builds after this (``tests/configured.py``);
    skipped (or failed in CI) without it."""
    status = probe()
    if not status.active:
        message = f"no sandbox: {status.problem}; {sandbox.INSTALL_HINT}"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(message)
        pytest.skip(message)
    monkeypatch.setenv("AGENT_SANDBOX", "auto")
    return status


def unsandboxed(monkeypatch: pytest.MonkeyPatch) -> sandbox.SandboxStatus:
    """No sandbox, for the settings the test builds after this."""
    monkeypatch.setenv("AGENT_SANDBOX", "off")
    return sandbox.probe(SandboxSettings(mode="off"))


async def run(ctx: ToolContext, command: str, timeout_s: int = 60) -> ToolOutcome:
    """The shell tool's handler on ``command``, as the tool activity calls it."""
    return await run_shell(ShellArgs(command=command, timeout_s=timeout_s), ctx)
