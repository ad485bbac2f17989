"""Without bubblewrap, reads run without a shell: nothing a line says can make the program the
classifier judged run another one (``tools/shell_direct.py``)."""

from __future__ import annotations

import asyncio
import os
import stat

import pytest

from core.settings import SandboxSettings
from tests import configured, sandboxing
from tools import sandbox
from tools.shell_direct import direct_argvs


@pytest.fixture
def no_bwrap(tmp_path, monkeypatch):
    """A tool context on a worker with ``AGENT_SANDBOX=auto`` that found no bubblewrap."""
    status = sandbox.probe(SandboxSettings(mode="auto"), path=str(tmp_path / "nowhere"))
    assert status.refuses_unsafe
    ctx = configured.tool_context(workspace=tmp_path, config=configured.settings(AGENT_SANDBOX="auto"))
    monkeypatch.setitem(sandbox._PROBED, ctx.settings.sandbox, status)
    return ctx


def _plant(tmp_path, name: str = "cat") -> os.PathLike:
    """A program named like a read, which says so when it runs (the marker file)."""
    evil = tmp_path / "bin" / name
    evil.parent.mkdir(exist_ok=True)
    evil.write_text(f"#!/bin/sh\necho planted > {tmp_path}/ran.txt\n")
    evil.chmod(evil.stat().st_mode | stat.S_IXUSR)
    return evil


@pytest.mark.parametrize("command", [
    "hash -p /usr/bin/python3 cat; cat -c 'open(\"ran.txt\", \"w\")'",
    "alias cat='sh -c \"echo planted > ran.txt\"'; cat a.txt",
    "PATH=./bin:$PATH cat a.txt",
    "PATH=./bin cat a.txt",
    "export PATH=./bin; cat a.txt",
    "cat() { echo planted > ran.txt; }; cat a.txt",
    "./bin/cat a.txt",
    "bin/cat a.txt",
    "cat a.txt > ran.txt",
    "cat $(echo a.txt)",
    "cat *.txt; echo planted > ran.txt",
    "enable -n cat; cat a.txt",
])
def test_without_bubblewrap_no_line_runs_another_program(no_bwrap, tmp_path, command):
    _plant(tmp_path)
    (tmp_path / "a.txt").write_text("hello")
    result = asyncio.run(sandboxing.run(no_bwrap, command))
    assert result.status == "error" and "[refused]" in result.content and "bubblewrap" in result.content
    assert not (tmp_path / "ran.txt").exists()


def test_without_bubblewrap_a_plain_read_runs_from_the_system_directories(no_bwrap, tmp_path, monkeypatch):
    _plant(tmp_path)
    # Even with the planted program first on the worker's own PATH, the system's cat runs.
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    ctx = configured.tool_context(workspace=tmp_path, config=configured.settings(AGENT_SANDBOX="auto"))
    (tmp_path / "a.txt").write_text("hello\nworld\n")
    result = asyncio.run(sandboxing.run(ctx, "cat a.txt"))
    assert result.status == "ok" and "hello" in result.content and "[exit code: 0]" in result.content
    assert not (tmp_path / "ran.txt").exists()


def test_without_bubblewrap_a_pipeline_of_reads_runs_with_its_pipes(no_bwrap, tmp_path):
    (tmp_path / "a.txt").write_text("b\na\nb\nc\n")
    result = asyncio.run(sandboxing.run(no_bwrap, "sort a.txt | uniq -c | grep -v ' c'"))
    lines = [line.split() for line in result.content.splitlines() if line.strip() and not line.startswith("[")]
    assert lines == [["1", "a"], ["2", "b"]]
    assert "[exit code: 0]" in result.content
    failing = asyncio.run(sandboxing.run(no_bwrap, "cat a.txt | grep zzz"))
    assert "[exit code: 1]" in failing.content  # the last command's status, as bash gives it


def test_without_bubblewrap_a_slow_read_is_killed_at_its_timeout(no_bwrap, tmp_path):
    fifo = tmp_path / "never"
    os.mkfifo(fifo)  # cat blocks on it forever
    result = asyncio.run(sandboxing.run(no_bwrap, "cat never | wc -l", timeout_s=1))
    assert result.status == "error" and "timed out after 1 s" in result.content


@pytest.mark.parametrize(("command", "runs"), [
    ("ls -la", True),
    ("grep -rn TODO .", True),
    ("head -n 3 a.txt | tail -n 1", True),
    ("cd sub", False),  # a builtin: no shell to run it in
    ("git status", False),  # hooks and config the agent can write run code
    ("less a.txt", False),
    ("find . -exec sh {} ;", False),
    ("cat a.txt && ls", False),
    ("cat a.txt |& cat", False),
    ("sort --compress-program=sh a.txt", False),
])
def test_direct_argvs_only_for_plain_reads(command, runs):
    found = direct_argvs(command)
    assert (found is not None) is runs
    if found:
        assert all(os.path.isabs(argv[0]) for argv in found)
