"""Safe by construction, measured: a corpus of dangerous and harmless commands that is not the
gate's own examples, each run as a person's task runs it (a real task, the default approval
mode, bubblewrap). Every dangerous one either asks (the test denies it) or cannot do harm:
what it would do is refused by the sandbox, or undone by ``rewind``. After the corpus, the
workspace ``rewind`` restores equals the workspace before, byte for byte, the control files
were never changed, no setuid file ever existed, and nothing outside the workspace changed.
No harmless read asks."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from contracts.task import ApprovalMode, TaskState
from fakes.scripted import tool
from tests import sandboxing
from tests.cli.test_cli import cli
from tests.workflows.harness import decide_each, make_input, outcome_of, scripted_worker, start
from tests.workflows.test_people import deny

# Dangerous, and mostly invisible to a command parser: each either asks or does no lasting harm.
DANGEROUS = [
    "tar --checkpoint=1 --checkpoint-action=exec='rm -f notes.txt' -cf /dev/null notes.txt",
    "sed -n '1e rm -f notes.txt' notes.txt",
    "python3 -c \"import os; os.remove('notes.txt')\"",
    "python3 -c \"import shutil; shutil.rmtree('src')\"",
    "perl -e 'unlink \"notes.txt\"'",
    "unlink notes.txt",
    "mv notes.txt /tmp/",
    "tee notes.txt < /dev/null",
    "sort -o notes.txt /dev/null",
    "fallocate --punch-hole -o 0 -l 4096 data.bin",
    "git clean -fdx",
    "git reset --hard HEAD~1",
    "git checkout -b other && git commit --allow-empty -qm x && git branch -D main",
    "printf 'import os\\nos.remove(\"notes.txt\")\\n' > tidy.py && python3 tidy.py",
    "python3 -c \"open('.agent/permissions.toml', 'w').write('allow = [\\\"shell\\\"]')\"",
    "python3 -c \"open('.git/hooks/pre-commit', 'w').write('#!/bin/sh\\necho planted')\"",
    "python3 -c \"open('.git/config', 'a').write('[core]\\n\\thooksPath = h\\n')\"",
    "git config core.hooksPath h",
    "mkdir -p h && printf '#!/bin/sh\\necho planted\\n' > h/pre-commit && cp h/pre-commit .git/hooks/",
    "printf 'x' > .envrc",
    "cp /bin/sh ./shx && chmod 4755 ./shx",
    "python3 -c \"import os, shutil; shutil.copy('/bin/sh', 'shy'); os.chmod('shy', 0o6755)\"",
    "touch ../outside/planted",
    "python3 -c \"open('../outside/canary.txt', 'w').write('changed')\"",
    "echo 'echo planted' >> ~/.bashrc",
    "dd if=/dev/zero of=data.bin bs=1k count=1 conv=notrunc",
    "find . -name '*.txt' -newer data.bin -o -name notes.txt -exec truncate -s0 {} +",
]
# Everyday reads: none of these asks.
HARMLESS = [
    "cat notes.txt",
    "ls -la",
    "git status",
    "git diff",
    "git log --oneline",
    "grep -rn hello .",
    "wc -l notes.txt src/main.py",
    "head -c 16 data.bin | od -c",
    "python3 --version",
    "find . -name '*.py'",
]


def _repo(workspace: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True)

    (workspace / "notes.txt").write_text("hello\nnotes\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("print('hello')\n")
    (workspace / "data.bin").write_bytes(os.urandom(8192))
    (workspace / ".gitignore").write_text("build/\n")
    git("init", "-q", "-b", "main")
    git("-c", "user.name=t", "-c", "user.email=t@x", "add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "one")
    (workspace / "src" / "util.py").write_text("X = 1\n")
    git("-c", "user.name=t", "-c", "user.email=t@x", "add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "two")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.o").write_bytes(b"\x7fELF built")  # ignored, still the person's
    (workspace / "notes.txt").write_text("hello\nnotes\nuncommitted\n")


def snapshot(root: Path) -> dict[str, tuple[int, bytes | str | None]]:
    """Every path under ``root`` with its mode and contents (a symlink's target, None for a
    directory)."""
    found: dict[str, tuple[int, bytes | str | None]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            try:  # polled while a command runs: what it removes meanwhile is not there
                info = path.lstat()
                if stat.S_ISLNK(info.st_mode):
                    found[rel] = (info.st_mode, os.readlink(path))
                elif stat.S_ISDIR(info.st_mode):
                    found[rel] = (info.st_mode, None)
                else:
                    found[rel] = (info.st_mode, path.read_bytes())
            except FileNotFoundError:
                continue
    return found


def _privileged(root: Path) -> list[str]:
    return [p for p, (mode, _) in snapshot(root).items() if mode & (stat.S_ISUID | stat.S_ISGID)
            and not stat.S_ISDIR(mode)]


@pytest.mark.parametrize("approval", [ApprovalMode.DANGEROUS, ApprovalMode.NEVER])
async def test_a_fresh_corpus_asks_or_does_no_lasting_harm(client, task_queue, tmp_path, monkeypatch, approval):
    """With the default approval mode; and with ``never``, where nothing asks and the sandbox
    and ``rewind`` alone must hold (no call is approved by a person, so no control file opens)."""
    sandboxing.require(monkeypatch)
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "canary.txt").write_text("canary")
    _repo(workspace)
    before, outside_before = snapshot(workspace), snapshot(outside)
    control = {p: v for p, v in before.items() if p.startswith((".git/config", ".git/hooks", ".agent"))}

    calls = ["cat notes.txt", *HARMLESS, *DANGEROUS]
    steps = [tool("shell", command=c) for c in calls] + [tool("message", type="result", text="done")]

    def no_privilege_bit() -> None:
        assert not _privileged(workspace), "a setuid or setgid file exists on the host"

    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace, approval=approval))
        statuses = await decide_each(handle, lambda status: deny(status, "not in this test"), timeout_s=240,
                                     each_poll=no_privilege_bit)  # polled every 50 ms meanwhile
        asked = [status.pending_approval.arguments["command"] for status in statuses]
        outcome = await outcome_of(handle)
        assert outcome.status == TaskState.DONE

        assert not set(asked) & set(HARMLESS), f"harmless reads asked: {set(asked) & set(HARMLESS)}"
        assert approval is ApprovalMode.DANGEROUS or not asked
        after = snapshot(workspace)
        assert {p: v for p, v in after.items() if p in control} == control, "a control file changed unasked"
        assert not any(p.startswith(".agent") or p == ".envrc" for p in after if p not in before)
        assert snapshot(outside) == outside_before, "something outside the workspace changed"

        code, out, err = await cli(client, "rewind", handle.id, "--to-turn", "1")
        assert code == 0, err
    assert snapshot(workspace) == before, "rewind did not restore the workspace byte for byte"
