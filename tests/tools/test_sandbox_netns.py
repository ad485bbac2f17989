"""Each sandboxed command's network namespace, made ahead of it (``tools/sandbox_netns.py``):
still one of its own, never the host's nor another running command's, with its loopback up
and no way out."""

from __future__ import annotations

import asyncio
import os

import pytest

from tests import configured, sandboxing
from tools import sandbox, shell

LOOPBACK = (
    "python3 -c \"import socket; s = socket.create_server(('127.0.0.1', 0)); "
    "c = socket.create_connection(s.getsockname()); print('loopback', s.accept()[1][0])\""
)


@pytest.fixture
def box(monkeypatch) -> sandbox.SandboxStatus:
    return sandboxing.require(monkeypatch)


async def test_every_command_has_a_network_namespace_of_its_own_with_its_loopback_up(box, tmp_path, monkeypatch):
    entered = []
    line = sandbox.command_line

    def spy(*args, **kwargs):
        entered.append(kwargs.get("netns_entered", False))
        return line(*args, **kwargs)

    monkeypatch.setattr(shell.sandbox, "command_line", spy)
    ctx = configured.tool_context(workspace=tmp_path)
    seen = []
    for _ in range(6):
        result = await sandboxing.run(ctx, f"readlink /proc/self/ns/net; {LOOPBACK}")
        namespace, loopback, *_ = result.content.splitlines()
        assert loopback == "loopback 127.0.0.1", result.content
        seen.append(namespace)
    assert os.readlink("/proc/self/ns/net") not in seen  # (a freed namespace's number is reused)
    if os.geteuid() == 0:  # a root worker makes them ahead: after the first, bwrap does not
        assert any(entered[1:]), entered


async def test_two_commands_at_once_are_in_two_namespaces(box, tmp_path):
    ctx = configured.tool_context(workspace=tmp_path)
    await sandboxing.run(ctx, "true")  # one is made ahead now, for one of the two
    both = await asyncio.gather(*(sandboxing.run(ctx, "readlink /proc/self/ns/net; sleep 0.5") for _ in range(2)))
    first, second = (result.content.splitlines()[0] for result in both)
    assert first.startswith("net:") and first != second


async def test_a_command_in_a_namespace_made_ahead_reaches_nothing_outside(box, tmp_path):
    ctx = configured.tool_context(workspace=tmp_path)
    for _ in range(2):  # the second runs in one made ahead, where the worker may make them
        result = await sandboxing.run(
            ctx, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\" 2>&1 | tail -1")
        assert result.content.splitlines()[0] == "lo" and "unreachable" in result.content.lower(), result.content
