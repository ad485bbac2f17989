"""The shell tool's sandbox (bubblewrap): what a command can and cannot touch.

These run the real ``bwrap`` (``.ci/run`` installs the Debian package; see
``tests/sandboxing.py`` for a machine without it).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from core.settings import EgressSettings, SandboxSettings
from tests import configured, sandboxing
from tools import sandbox, shell
from tools.shell_network import CommandEgress


@pytest.fixture
def box(monkeypatch) -> sandbox.SandboxStatus:
    return sandboxing.require(monkeypatch)



async def test_the_workspace_is_writable_and_nothing_outside_it_is(box, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = Path.home() / f".sandbox-probe-{uuid.uuid4().hex[:8]}"
    sibling = tmp_path / "outside.txt"
    ctx = configured.tool_context(workspace=workspace)
    result = await sandboxing.run(ctx, "; ".join([
        "echo inside > in.txt",
        f"touch {outside} 2>&1 || echo touch-refused",
        f"echo x > {outside}.redirect 2>&1 || echo redirect-refused",
        f"python3 -c \"open('{outside}.py', 'w')\" 2>&1 | tail -1",
        f"echo x > {sibling}; cat {sibling}",  # /tmp is private: the host's file is not written
        "echo tmp > /tmp/scratch && cat /tmp/scratch",
    ]))
    try:
        assert (workspace / "in.txt").read_text() == "inside\n"
        assert "touch-refused" in result.content and "redirect-refused" in result.content
        assert "Read-only file system" in result.content
        for path in (outside, Path(f"{outside}.redirect"), Path(f"{outside}.py")):
            assert not path.exists(), f"{path} was written outside the workspace"
        assert not sibling.exists()
        assert "tmp" in result.content
    finally:
        for path in (outside, Path(f"{outside}.redirect"), Path(f"{outside}.py")):
            path.unlink(missing_ok=True)


async def _connections(count: list[int]):
    async def handle(reader, writer):
        count.append(1)
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


@pytest.mark.parametrize("network", [False, True])
async def test_a_command_opens_no_connection_of_its_own_with_or_without_the_network(box, tmp_path, network):
    count: list[int] = []
    server = await _connections(count)
    port = server.sockets[0].getsockname()[1]
    # With the network, the proxy would let this address through; a socket of the command's own is another matter.
    outlet = CommandEgress(EgressSettings.from_env({"AGENT_NETWORK_ALLOW": "127.0.0.1"}))
    ctx = configured.tool_context(workspace=tmp_path, network=network, command_egress=outlet)
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')"
    try:
        result = await sandboxing.run(ctx, f'python3 -c "{code}" 2>&1 | tail -1')
    finally:
        server.close()
        outlet.close()
    assert result.content == "ConnectionRefusedError: [Errno 111] Connection refused\n[exit code: 0]" and count == []


async def test_the_worker_and_its_files_are_out_of_sight(box, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "context.db").write_text("private")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    ctx = configured.tool_context(workspace=workspace, hidden=(data,))
    result = await sandboxing.run(ctx, f"ls -A {data}; cat {data}/context.db 2>&1; ls /proc | grep -c '^[0-9]'; id -u")
    lines = result.content.splitlines()
    assert "private" not in result.content and "No such file" in result.content
    assert int(lines[-3]) < 10  # only the sandbox's own processes, not the worker's
    # No capability survives, even as root: nothing can be remounted writable.
    remount = await sandboxing.run(ctx, "mount -o remount,rw / 2>&1; touch /etc/sandbox-probe 2>&1")
    assert not Path("/etc/sandbox-probe").exists()
    assert "denied" in remount.content.lower() or "read-only" in remount.content.lower()


async def test_background_processes_end_with_the_command(box, tmp_path):
    ctx = configured.tool_context(workspace=tmp_path)
    gate = sandboxing.Gate(tmp_path / "gate")
    command = "(cat gate; echo late > late.txt) & echo launched; while [ ! -e go ]; do sleep 0.01; done"
    running = asyncio.create_task(sandboxing.run(ctx, command))
    deadline = time.monotonic() + 10
    try:
        while not gate.reading():  # the child is up and reading
            assert time.monotonic() < deadline and not running.done(), "the background child never read"
            await asyncio.sleep(0.02)
        (tmp_path / "go").touch()
        result = await running
        assert result.content.startswith("launched")
        while not gate.read_by_none():  # the child died with the command
            assert time.monotonic() < deadline, "the background child outlived its command"
            await asyncio.sleep(0.02)
    finally:
        gate.close()


def test_without_bubblewrap_only_read_only_commands_run(tmp_path, monkeypatch):
    status = sandbox.probe(SandboxSettings(mode="auto"), path=str(tmp_path))
    assert not status.active and status.refuses_unsafe
    assert "apt-get install bubblewrap" in status.notice() and "AGENT_SANDBOX=off" in status.notice()
    assert len(status.notice().splitlines()) == 1
    ctx = configured.tool_context(workspace=tmp_path)
    monkeypatch.setitem(sandbox._PROBED, ctx.settings.sandbox, status)  # as a worker without bwrap found
    (tmp_path / "a.txt").write_text("hello")
    read = asyncio.run(sandboxing.run(ctx, "cat a.txt"))
    write = asyncio.run(sandboxing.run(ctx, "echo x > b.txt"))
    assert read.status == "ok" and "hello" in read.content
    assert write.status == "error" and "[refused]" in write.content and "bubblewrap" in write.content
    assert not (tmp_path / "b.txt").exists()


def test_sandbox_modes(tmp_path):
    off = sandbox.probe(SandboxSettings.from_env({"AGENT_SANDBOX": "off"}), path="")
    assert not off.active and not off.refuses_unsafe and "unsandboxed" in off.notice()
    with pytest.raises(sandbox.SandboxUnavailable, match="apt-get install bubblewrap"):
        sandbox.probe(SandboxSettings.from_env({"AGENT_SANDBOX": "required"}), path=str(tmp_path))
    with pytest.raises(ValueError, match="AGENT_SANDBOX"):
        SandboxSettings.from_env({"AGENT_SANDBOX": "maybe"})
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    broken.chmod(0o755)
    refused = sandbox.probe(SandboxSettings.from_env({"AGENT_SANDBOX": "auto", "AGENT_BWRAP": str(broken)}))
    assert not refused.active and "No permissions to create new namespace" in refused.notice()


def test_a_command_line_hides_paths_around_the_workspace_in_order(tmp_path):
    workspace = tmp_path / "data" / "ws"
    workspace.mkdir(parents=True)
    argv = sandbox.command_line("bwrap", ["true"], workspace=workspace, hidden=(tmp_path / "data",))
    assert argv.index("--tmpfs", argv.index("--cap-drop")) < argv.index("--bind")  # parent hidden first
    assert "--unshare-net" in argv and "--die-with-parent" in argv
    argv = sandbox.command_line("bwrap", ["true"], workspace=workspace, hidden=(), egress=(tmp_path / "s", "/tmp/s"))
    assert "--unshare-net" in argv  # with the network too: only through the proxy's socket
    assert "--tmpfs /tmp " in " ".join(argv) and f"--ro-bind {tmp_path / 's'} /tmp/s --chdir" in " ".join(argv)


async def test_secrets_are_redacted_before_the_output_is_cut(box, tmp_path):
    secret = "sk-live-" + "s3cr3t" * 8
    redact = lambda text: text.replace(secret, "{{secret:KEY}}")  # noqa: E731
    ctx = configured.tool_context(workspace=tmp_path, redact=redact)
    half = shell.OUTPUT_CAP_CHARS // 2
    # The secret straddles the head's cut, then the tail's, of a flood the middle of which is dropped.
    (tmp_path / "out.txt").write_text("a" * (half - 10) + secret + "b" * 300_000 + secret + "c" * (half - 20))
    result = await sandboxing.run(ctx, "cat out.txt")
    assert result.truncated
    for part in (secret[:10], secret[-20:], secret[10:30]):
        assert part not in result.content


def test_a_command_line_covers_proc_and_hides_the_hosts_secrets_around_the_workspace(tmp_path):
    workspace = tmp_path / "home" / "me" / "project"
    workspace.mkdir(parents=True)
    shown = tmp_path / "home" / "me" / ".pyenv"
    shown.mkdir()
    argv = sandbox.command_line("bwrap", ["true"], workspace=workspace,
                                hidden=(tmp_path / "home",), readable=(shown, tmp_path / "elsewhere"))
    text = " ".join(argv)
    assert argv.index("--proc") < argv.index("--remount-ro") and "--proc /proc --remount-ro /proc" in text
    assert "--tmpfs /root" in text and "--tmpfs /home" in text and "--tmpfs /run" in text
    if Path("/etc/shadow").exists():
        assert "--ro-bind /dev/null /etc/shadow" in text
    hidden, bound = text.index(f"--tmpfs {tmp_path / 'home'} "), text.index(f"--bind {workspace} ")
    assert hidden < text.index(f"--ro-bind-try {shown} ") and hidden < bound
    assert "elsewhere" not in text  # shown again only inside what is hidden
    assert bound < text.index(f"--remount-ro {tmp_path / 'home'} ")  # read-only once the workspace is in


async def test_a_path_named_readable_is_shown_read_only_inside_a_hidden_directory(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "tools").mkdir(parents=True)
    (data / "tools" / "run.sh").write_text("echo tool ran\n")
    (data / "secret.txt").write_text("private")
    sandboxing.require(monkeypatch)
    monkeypatch.setenv("AGENT_SANDBOX_READABLE", str(data / "tools"))
    ctx = configured.tool_context(workspace=tmp_path / "ws", hidden=(data,))
    (tmp_path / "ws").mkdir()
    result = await sandboxing.run(ctx, f"ls -A {data}; sh {data}/tools/run.sh; touch {data}/tools/x 2>&1")
    assert result.content.splitlines()[:2] == ["tools", "tool ran"]
    assert "Read-only file system" in result.content and "private" not in result.content


async def test_everyday_commands_still_work_in_the_sandbox(box, tmp_path, monkeypatch):
    for name in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(name, "Agent")
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(name, "agent@example.com")
    configured.use(monkeypatch, AGENT_SHELL_ENV_ALLOW="GIT_AUTHOR_NAME,GIT_AUTHOR_EMAIL,GIT_COMMITTER_NAME,GIT_COMMITTER_EMAIL")
    (tmp_path / "script.py").write_text("import json, sys\nprint(json.dumps({'sum': sum(range(5))}))\n")
    (tmp_path / "Makefile").write_text("all:\n\techo built > out.txt\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # in the sandbox it needs approval
    result = await sandboxing.run(configured.tool_context(workspace=tmp_path), "set -e; " + "; ".join([
        "python3 script.py",
        "python3 -m pip --version | cut -c1-4",
        "git add script.py && git commit -qm first && git log --format=%an:%s",
        "make -s && cat out.txt",
    ]), timeout_s=120)
    assert result.content.splitlines() == ['{"sum": 10}', "pip ", "Agent:first", "built", "[exit code: 0]"]
