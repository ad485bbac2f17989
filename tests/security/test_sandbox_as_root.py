"""The shell sandbox holds as root (the default in containers, and how CI runs): each hole a
fault hunt found, shown closed with the real bubblewrap. As another user the kernel refuses
these anyway; the tests still run and must pass."""

from __future__ import annotations

import os
import stat
import subprocess
import uuid
from pathlib import Path

import pytest

from core.settings import SandboxSettings
from tests import configured, sandboxing
from tools import sandbox

# Starts 500 processes, says how many it got, and ends them itself (unsandboxed, nothing else would).
MANY_PROCESSES = """
import subprocess, sys
started = []
try:
    for _ in range(500):
        started.append(subprocess.Popen(["sleep", "30"]))
    code = 0
except OSError as err:
    print("refused after", len(started), err)
    code = 1
for p in started:
    p.kill()
    p.wait()
sys.exit(code)
"""


@pytest.fixture
def box(monkeypatch) -> sandbox.SandboxStatus:
    return sandboxing.require(monkeypatch)



async def test_proc_sys_cannot_be_written_from_inside(box, tmp_path):
    swappiness = Path("/proc/sys/vm/swappiness").read_text()
    result = await sandboxing.run(configured.tool_context(workspace=tmp_path), "; ".join([
        "echo 1 > /proc/sys/vm/drop_caches",
        "cat /proc/sys/vm/swappiness > /proc/sys/vm/swappiness",  # the same value: harmless if it got through
        # Opening for write writes nothing; it must fail all the same.
        "python3 -c \"import os; os.open('/proc/sys/kernel/core_pattern', os.O_WRONLY)\" 2>&1 | tail -1",
        *(f"[ -w /proc/{entry} ] && echo writable: {entry}" for entry in sandbox.PROC_READ_ONLY),
        "true",
    ]))
    assert result.content.count("Read-only file system") == 3, result.content
    assert "writable:" not in result.content
    assert Path("/proc/sys/vm/swappiness").read_text() == swappiness


async def test_a_sandboxed_command_never_makes_a_setuid_file_even_as_root(box, tmp_path):
    """The seccomp filter refuses the bits (tools/sandbox_seccomp.py): no file has one while the
    command runs, so the after-check, the second line, finds nothing to take off."""
    passwd = Path("/usr/bin/passwd")
    result = await sandboxing.run(configured.tool_context(workspace=tmp_path), "; ".join([
        "cp /bin/sh rootshell && chmod 4755 rootshell",
        f"cp -p {passwd} . 2>/dev/null",
        "install -m 4755 /bin/true tool",
        "install -m 2755 /bin/true groupy",
        "mkdir shared && chmod 2775 shared",
        "ls -l | grep -c '^-..s'",  # no setuid file even while the command runs
    ]))
    made = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in made} >= {"rootshell", "tool", "groupy"}
    for path in made:
        assert not path.stat().st_mode & (stat.S_ISUID | stat.S_ISGID), f"{path.name} is setuid on the host"
    # The filter cannot tell a directory from a file: g+s on one is refused too.
    assert not (tmp_path / "shared").stat().st_mode & stat.S_ISGID
    *_, setuid_inside, exit_code = result.content.splitlines()
    assert setuid_inside == "0" and exit_code == "[exit code: 1]"  # grep -c found none
    assert "setuid/setgid bits taken off" not in result.content
    if passwd.exists():
        assert passwd.stat().st_mode & stat.S_ISUID  # the host's own keeps its bit


async def test_the_hosts_secrets_and_home_directories_are_out_of_sight(box, tmp_path):
    result = await sandboxing.run(configured.tool_context(workspace=tmp_path), "; ".join([
        "cat /etc/shadow /etc/gshadow 2>/dev/null | wc -c",
        "echo root: $(ls -A /root | wc -l) home: $(ls -A /home | wc -l) run: $(ls -A /run | wc -l)",
        "touch /root/probe 2>&1",
        "echo HOME=$HOME; touch ~/ok && echo home-writable",
    ]))
    lines = result.content.splitlines()
    assert lines[0] == "0", "a line of /etc/shadow or /etc/gshadow was read"
    assert "root: 0 home: 0 run: 0" in result.content
    assert "Read-only file system" in lines[2]
    assert "HOME=/tmp" in result.content and "home-writable" in result.content


async def test_a_workspace_inside_a_hidden_directory_stays_visible_and_writable(box):
    if os.getuid() != 0 or not os.access("/root", os.W_OK):
        sandboxing.skip("the test needs root and a writable /root")
    workspace = Path("/root") / f".sandbox-workspace-{uuid.uuid4().hex[:8]}"
    workspace.mkdir()
    try:
        result = await sandboxing.run(configured.tool_context(workspace=workspace), "echo made > made.txt; ls -A /root; ls -A /root | wc -l")
        assert (workspace / "made.txt").read_text() == "made\n"
        assert result.content.splitlines()[:2] == [workspace.name, "1"]  # nothing else of /root
    finally:
        for path in workspace.iterdir():
            path.unlink()
        workspace.rmdir()


def _limited_procs(box: sandbox.SandboxStatus) -> None:
    if not box.procs_limited:
        sandboxing.skip("root without a writable pids cgroup: no process limit can hold here")


@pytest.mark.parametrize("mode", ["sandboxed", "unsandboxed"])
async def test_500_processes_are_refused_and_the_host_is_fine(mode, tmp_path, monkeypatch):
    box = sandboxing.require(monkeypatch) if mode == "sandboxed" else sandboxing.unsandboxed(monkeypatch)
    _limited_procs(box)
    (tmp_path / "many.py").write_text(MANY_PROCESSES)
    result = await sandboxing.run(configured.tool_context(workspace=tmp_path), "python3 many.py")
    assert result.exit_code == 1 and "refused after" in result.content, result.content
    refused_after = int(result.content.split("refused after ")[1].split()[0])
    assert refused_after < box.limits.procs
    assert subprocess.run(["true"], check=False).returncode == 0  # the worker still starts processes


@pytest.mark.parametrize("mode", ["sandboxed", "unsandboxed"])
async def test_a_4_gib_allocation_is_refused(mode, tmp_path, monkeypatch):
    if mode == "sandboxed":
        sandboxing.require(monkeypatch)
    else:
        sandboxing.unsandboxed(monkeypatch)
    result = await sandboxing.run(configured.tool_context(workspace=tmp_path), 'python3 -c "b = bytearray(4 * 2**30)" 2>&1 | tail -1; '
                                                          'python3 -c "b = bytearray(64 * 2**20); print(len(b))"')
    assert result.content.splitlines()[:2] == ["MemoryError", str(64 * 2**20)]


async def test_the_limits_are_what_the_operator_set(tmp_path, monkeypatch):
    env = {"AGENT_SANDBOX": "auto", "AGENT_SHELL_MAX_MEMORY_MB": "1024",
           "AGENT_SHELL_MAX_CPU_S": "60", "AGENT_SHELL_MAX_FILE_MB": "1", "AGENT_SHELL_MAX_PROCS": "20"}
    box = sandbox.probe(SandboxSettings.from_env(env))
    if not box.active:
        sandboxing.require(monkeypatch)  # skips, or fails in CI
    ctx = configured.tool_context(tmp_path, configured.use(monkeypatch, **env))
    result = await sandboxing.run(ctx, "for o in d t f c; do ulimit -$o; done; head -c 2M /dev/zero > big; wc -c < big")
    assert result.content.splitlines()[:4] == ["1048576", "60", "1024", "0"]  # KiB, s, KiB, blocks
    assert "File size limit exceeded" in result.content and f"\n{2**20}\n" in result.content
    if box.procs_limited:
        code = "import subprocess as s; [s.Popen(['sleep', '5'], stdout=s.DEVNULL, stderr=s.DEVNULL) for _ in range(30)]"
        few = await sandboxing.run(ctx, f'python3 -c "{code}" 2>&1 | tail -1')
        assert "Resource temporarily unavailable" in few.content
