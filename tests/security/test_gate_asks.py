"""The gate as a person meets it (issue 39), through real tasks with the default approval mode:
each command a fault hunt got through asks, the harmless table runs unasked, and "allow commands
like this" (remembered, or a standing rule) allows exactly that kind of call and nothing worse."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from contracts.task import ApprovalDecision, TaskState, TaskStatus
from core.permissions import parse_permissions
from fakes.scripted import tool
from tests import sandboxing
from tests.workflows.harness import decide_each, make_input, outcome_of, scripted_worker, start
from tests.workflows.test_people import approve, deny
from tools.base import Danger
from tools.shell_policy import classify_command
from workflows.task import AgentTaskWorkflow

# Each of these got through a blind set before: every one asks.
ASKS = [
    "tar --checkpoint=1 --checkpoint-action=exec='rm -f notes.txt' -cf /dev/null notes.txt",
    "tar -I 'sh -c \"rm -f notes.txt\"' -cf a.tar notes.txt",
    "sed -n '1e rm -f notes.txt' notes.txt",
    "vim -es -c '!rm -f notes.txt' notes.txt",
    "ex -sc '!rm -f notes.txt' notes.txt",
    "gdb -batch -ex 'shell rm -f notes.txt'",
    "git difftool -x 'rm -f notes.txt' HEAD",
    "make -f - all",
    "prlimit --nproc=64 rm -rf src",
    "setarch x86_64 rm -rf src",
    "setpriv --no-new-privs rm -rf src",
    "hash -p /bin/rm ls; ls notes.txt",
    "alias ls='rm -f notes.txt'; ls",
    "PATH=.:$PATH ls",
    "export PATH=.:$PATH",
    "unlink notes.txt",
    "sort -o notes.txt /dev/null",
    "fallocate --punch-hole -o 0 -l 4096 data.bin",
    "tee notes.txt < /dev/null",
    "mv notes.txt /tmp/",
    "pip install requests",
    "npm install left-pad",
    "uv pip install requests",
    "cargo install ripgrep",
    "gem install rails",
]
# Reads and everyday work in the sandbox: none of these asks.
HARMLESS = ["cat notes.txt", "ls -la", "git status", "git diff", "python3 x.py", "pytest -q", "make"]
# After `git push origin HEAD:main` is allowed: each of these is worse, or goes elsewhere.
WORSE_PUSHES = ["git push --force origin HEAD:main", "git push origin +HEAD:main", "git push --delete origin main",
                "git push --mirror origin", "git push upstream HEAD:main"]
PUSH = "git push origin HEAD:main"


def _repo(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    (workspace / "data.bin").write_bytes(b"\0" * 8192)
    (workspace / "src").mkdir()
    (workspace / "x.py").write_text("print('hello')\n")
    (workspace / "Makefile").write_text("all:\n\t@echo built\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@x", *args], cwd=workspace, check=True,
                       capture_output=True)


async def _asked(client, task_queue, workspace: Path, calls: list[str], *, remember_first: bool = False,
                 **overrides) -> tuple[list[str], list[str]]:
    """Run ``calls`` in one task; deny every question (approve the first with "allow commands
    like this" when ``remember_first``). Returns what asked and the rules the task allowed."""
    steps = [tool("shell", command=c) for c in calls] + [tool("message", type="result", text="done")]
    answered: list[str] = []

    def decide(status: TaskStatus) -> ApprovalDecision:
        answered.append(status.pending_approval.arguments["command"])
        if remember_first and len(answered) == 1:
            assert status.pending_approval.rule == "shell(git push origin)"  # the prompt shows the rule stored
            return approve(status, remember=True)
        return deny(status, "not in this test")

    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace, **overrides))
        await decide_each(handle, decide)
        outcome = await outcome_of(handle)
        status = await handle.query(AgentTaskWorkflow.status)
    assert outcome.status == TaskState.DONE
    return answered, status.allowed


async def test_every_command_of_the_hunt_asks_and_the_harmless_table_does_not(client, task_queue, tmp_path,
                                                                               monkeypatch):
    sandboxing.require(monkeypatch)
    _repo(tmp_path)
    asked, _ = await _asked(client, task_queue, tmp_path, [*HARMLESS, *ASKS])  # the default mode
    assert asked == ASKS
    assert (tmp_path / "notes.txt").read_text() == "hello\n"


async def test_a_remembered_push_allows_that_push_and_nothing_worse(client, task_queue, tmp_path, monkeypatch):
    sandboxing.require(monkeypatch)
    _repo(tmp_path)
    asked, allowed = await _asked(client, task_queue, tmp_path, [PUSH, *WORSE_PUSHES, PUSH], remember_first=True)
    assert asked == [PUSH, *WORSE_PUSHES]  # the second plain push ran unasked
    assert allowed == ["shell(git push origin)"]


async def test_a_standing_push_rule_allows_no_forced_deleting_or_mirroring_push(client, task_queue, tmp_path,
                                                                                monkeypatch):
    sandboxing.require(monkeypatch)
    _repo(tmp_path)
    rules = parse_permissions('allow = ["shell(git push)"]', source=".agent/permissions.toml")
    asked, _ = await _asked(client, task_queue, tmp_path, [PUSH, *WORSE_PUSHES], permissions=rules)
    assert asked == WORSE_PUSHES[:-1]  # a standing rule names no remote: another remote is allowed


@pytest.mark.parametrize("command", ASKS)
def test_each_command_of_the_hunt_is_dangerous_with_a_reason(command):
    danger, reason = classify_command(command)
    assert danger is Danger.DANGEROUS and reason
