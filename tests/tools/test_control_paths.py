"""Control files (``tools/control_paths.py``) without a sandbox: the list docs/safety.md shows, which
paths are control files by name, the file tool's refusal, and the gate asking before a command
or a write that names one. What a sandboxed command can do to them is in
``tests/tools/test_sandbox_control.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import docs
from tests import configured
from tools import control_paths
from tools.base import Danger
from tools.file import FileArgs, classify, file_tool
from tools.shell_policy import classify_command

ROOT = Path(__file__).resolve().parents[2]


def test_the_safety_page_lists_exactly_the_control_paths():
    written = docs.written(docs.named("control paths"), ROOT)
    assert written is not None, "docs/safety.md has no generated control-paths list"
    assert written.splitlines() == control_paths.readme_lines(), f"the list is stale: run {docs.REGENERATE}"


@pytest.mark.parametrize("rel, expected", [
    (".agent/permissions.toml", ".agent"),
    (".agent/skills/x/SKILL.md", ".agent"),
    (".git/hooks/pre-commit", ".git/hooks"),
    (".git/config", ".git/config"),
    (".git", ".git/commondir"),  # a file there points git elsewhere
    (".envrc", ".envrc"),
    (".vscode/tasks.json", ".vscode"),
    (".venv/bin/activate.fish", "<venv>/bin/activate*"),
    ("env/lib/python3.12/site-packages/evil.pth", "<venv>/lib/python*/site-packages"),
    ("src/app.py", None),
    (".git/HEAD", None),
    (".venv/bin/python", None),
    ("docs/.envrc.md", None),
])
def test_control_paths_are_known_by_name(rel, expected):
    found = control_paths.named(tuple(rel.split("/")))
    assert (found.path if found else None) == expected


@pytest.mark.parametrize("action, extra", [("write", {"content": "evil\n"}), ("edit", {"old": "ok", "new": "evil"})])
async def test_the_file_tool_writes_a_control_file_only_when_approved(workspace, action, extra):
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True)
    hook.write_text("ok\n")
    args = FileArgs(action=action, path=".git/hooks/pre-commit", **extra)
    refused = await file_tool(args, configured.tool_context(workspace))
    assert refused.status == "error" and ".git/hooks/pre-commit" in refused.content
    assert "approves this exact call" in refused.content and hook.read_text() == "ok\n"
    done = await file_tool(args, configured.tool_context(workspace, approved=True))
    assert done.status == "ok" and hook.read_text() == "evil\n"


async def test_the_file_tool_refuses_to_create_a_control_file_that_is_missing(workspace):
    for rel in (".envrc", ".agent/skills/x/SKILL.md", ".vscode/tasks.json", ".git"):
        result = await file_tool(FileArgs(action="write", path=rel, content="x"), configured.tool_context(workspace))
        assert result.status == "error" and "control file" in result.content
    assert list(workspace.iterdir()) == []
    ordinary = await file_tool(FileArgs(action="write", path="notes/.envrc.md", content="x"),
                               configured.tool_context(workspace))
    assert ordinary.status == "ok"


def test_a_file_write_to_a_control_file_asks_and_says_why():
    danger, reason = classify(FileArgs(action="write", path="./.git/config", content="x"))
    assert danger is Danger.DANGEROUS and reason.startswith("writes .git/config (")
    assert classify(FileArgs(action="edit", path=".vscode/settings.json", old="a", new="b"))[0] is Danger.DANGEROUS
    assert classify(FileArgs(action="read", path=".git/config")) is Danger.SAFE
    assert classify(FileArgs(action="write", path="src/app.py", content="x")) is Danger.MODERATE


CONTROL_COMMANDS = {
    "echo x > .git/config": "writes .git/config (",
    "echo '[core]' >> .git/config": "writes .git/config (",
    "cp hooks/pre-commit .git/hooks/": "writes .git/hooks (",
    "echo x > .agent/permissions.toml": "writes .agent (",
    "cp skill.md .agent/skills/x/SKILL.md": "writes .agent (",
    "echo '{}' > .vscode/tasks.json": "writes .vscode (",
    "tee .idea/workspace.xml < x": "writes .idea (",
    "echo 'import os' > .venv/lib/python3.12/site-packages/x.pth": "writes .venv/lib/python3.12/site-packages (",
    "echo x >> venv/bin/activate": "writes venv/bin/activate (",
    "mkdir -p .husky && echo x > .husky/pre-commit": "writes .husky (",
    "git config user.email dev@example.com": "writes .git/config, which names commands git runs on the host",
    "git config --unset user.name": "writes .git/config",
    "git config core.hooksPath x": "sets a command git will run (git config core.hooksPath)",
    "git init": "creates .git, whose hooks and config git runs on the host (git init)",
    "git remote add origin https://x.example/r.git": "writes .git/config, which names commands git runs on the host "
                                                     "(git remote add)",
    "git remote set-url origin https://x.example/r.git": "(git remote set-url)",
    "git submodule add https://x.example/r.git lib/r": "writes .gitmodules and .git/config",
    ".venv/bin/pip install requests": "installs packages into the workspace's virtualenv",
    "venv/bin/python -m pip install -e .": "installs packages into the workspace's virtualenv",
    "uv add httpx": "site-packages Python runs at every start (uv add)",
    "uv pip install httpx": "site-packages Python runs at every start (uv pip install)",
    "uv sync": "site-packages Python runs at every start (uv sync)",
}


@pytest.mark.parametrize("command", list(CONTROL_COMMANDS))
def test_a_command_that_visibly_writes_a_control_file_asks(command):
    danger, reason = classify_command(command)
    assert danger is Danger.DANGEROUS and CONTROL_COMMANDS[command] in reason


@pytest.mark.parametrize("command", [
    "git config --get user.email", "git config --list", "git config user.email", "git remote -v",
    "git status", "git add -A && git commit -m x", "pip list", ".venv/bin/pip list",
    "echo x > notes/.envrc.md", "cat .git/config", "uv run pytest",
])
def test_commands_that_leave_control_files_alone_do_not_ask_for_them(command):
    assert classify_command(command)[0] is not Danger.DANGEROUS


def test_placeholders_nested_across_two_commands_are_all_removed(tmp_path):
    """A second command's guard, while the first's placeholder ``.git`` stands, pins it and puts
    ``.git/hooks`` inside it: once both are released, neither is left (the deepest goes first)."""
    first = control_paths.guard(tmp_path)
    for path in first.placeholders:  # bwrap makes the mount points
        path.mkdir()
    second = control_paths.guard(tmp_path)
    hooks = tmp_path / ".git" / "hooks"
    assert hooks in second.placeholders and (tmp_path / ".git") in second.placeholders
    hooks.mkdir()
    control_paths.release(first)
    control_paths.settle()
    assert hooks.is_dir()  # the second command still holds what it stands on
    control_paths.release(second)
    control_paths.settle()
    assert list(tmp_path.iterdir()) == []
