"""Control files in the sandbox (``tools/control_paths.py``): a command the person did not
approve cannot change them however it writes, the approved one can, git keeps working, and a
missing one leaves nothing behind. These run the real ``bwrap`` (``tests/sandboxing.py``)."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests import configured, sandboxing
from tools import control_paths, sandbox
from tools.file import FileArgs, file_tool

TARGETS = (".agent/permissions.toml", ".git/hooks/pre-commit", ".git/config")
EVIL = "evil-line\n"


@pytest.fixture
def box(monkeypatch) -> sandbox.SandboxStatus:
    return sandboxing.require(monkeypatch)


def _git(workspace: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=workspace, capture_output=True, text=True, check=True)
    return done.stdout


def _repo(workspace: Path) -> dict[str, str]:
    """A repository with a commit, a hook and permission rules: each target's content."""
    _git(workspace, "init", "-q")
    _git(workspace, "config", "user.email", "dev@example.com")
    _git(workspace, "config", "user.name", "dev")
    (workspace / "a.txt").write_text("a\n")
    _git(workspace, "add", "a.txt")
    _git(workspace, "commit", "-qm", "a")
    (workspace / ".agent").mkdir()
    (workspace / ".agent" / "permissions.toml").write_text("allow = []\n")
    (workspace / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    return {rel: (workspace / rel).read_text() for rel in TARGETS}


def _stage(root: Path) -> None:
    """The three targets with evil content under ``root`` (for cp, rsync and tar)."""
    for rel in TARGETS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(EVIL)


def _archive(workspace: Path, tmp_path: Path) -> None:
    _stage(tmp_path / "staged")
    with tarfile.open(workspace / "evil.tar", "w") as tar:
        for rel in TARGETS:
            tar.add(tmp_path / "staged" / rel, arcname=rel)


WRITES = "\n".join(f"echo {EVIL.strip()} >> {rel}" for rel in TARGETS)
PYTHON = f"python3 -c \"[open(p, 'a').write('{EVIL.strip()}') for p in {list(TARGETS)!r}]\""
ATTACKS = {
    "redirection": WRITES.replace("\n", "; "),
    "python": PYTHON,
    "script": "sh w.sh",
    "tar": "tar xf evil.tar",
    "cp": "cp -r stage/. .",
    "rsync": "rsync -a stage/ ./",
    "git config": "git config core.hooksPath x",
    "rename the parent": "mv .git .git-old && cp -r .git-old .git && echo evil-line >> .git/hooks/pre-commit",
}


@pytest.mark.parametrize("approved", [False, True], ids=["unapproved", "approved"])
@pytest.mark.parametrize("attack", list(ATTACKS))
async def test_control_files_change_only_in_an_approved_command(box, tmp_path, workspace, attack, approved):
    before = _repo(workspace)
    if attack == "script":  # written by the file tool, then run
        await file_tool(FileArgs(action="write", path="w.sh", content=WRITES), configured.tool_context(workspace))
    elif attack == "tar":
        _archive(workspace, tmp_path)
    elif attack in ("cp", "rsync"):
        _stage(workspace / "stage")
        if attack == "rsync" and shutil.which("rsync") is None:
            sandboxing.skip("rsync is not installed (.ci/run installs it)")
    config = (workspace / ".git" / "config").read_text()
    result = await sandboxing.run(configured.tool_context(workspace, approved=approved), ATTACKS[attack])
    after = {rel: (workspace / rel).read_text() for rel in TARGETS if (workspace / rel).exists()}
    if approved:
        assert after != before, result.content
    else:
        assert after == before, result.content
        assert "hooksPath" not in (workspace / ".git" / "config").read_text()
        assert (workspace / ".git" / "config").read_text() == config
    if attack == "redirection" and not approved:
        assert "read-only in the sandbox" in result.content and "approves this exact call" in result.content


@pytest.mark.parametrize("approved", [False, True], ids=["unapproved", "approved"])
async def test_a_hook_cannot_be_added_where_the_hooks_directory_is_missing(box, workspace, approved):
    _repo(workspace)
    shutil.rmtree(workspace / ".git" / "hooks")
    command = "mkdir -p .git/hooks && printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/post-commit"
    result = await sandboxing.run(configured.tool_context(workspace, approved=approved), command)
    assert (workspace / ".git" / "hooks" / "post-commit").exists() == approved, result.content
    if not approved:
        assert not (workspace / ".git" / "hooks").exists()  # the placeholder is gone


async def test_the_hooks_directory_the_config_names_is_read_only(box, workspace):
    _repo(workspace)
    _git(workspace, "config", "core.hooksPath", "tools/hooks")
    result = await sandboxing.run(configured.tool_context(workspace), "mkdir -p tools/hooks; echo x > tools/hooks/pre-commit")
    assert not (workspace / "tools" / "hooks").exists(), result.content


async def test_git_status_add_and_commit_work_unapproved(box, workspace):
    _repo(workspace)
    ctx = configured.tool_context(workspace)
    result = await sandboxing.run(ctx, "echo b > b.txt && git add -A && git commit -qm b && git status --short "
                                       "&& git log --oneline | wc -l && git show --stat --format= HEAD")
    assert "[exit code: 0]" in result.content, result.content
    assert _git(workspace, "log", "--format=%s") == "b\na\n"
    assert _git(workspace, "show", "--name-only", "--format=", "HEAD").split() == [".agent/permissions.toml", "b.txt"]


async def test_a_fresh_workspace_keeps_no_placeholder_and_git_init_needs_approval(box, workspace):
    (workspace / "notes.txt").write_text("x\n")
    ctx = configured.tool_context(workspace)
    seen = await sandboxing.run(ctx, "ls -A; git init -q")
    assert ".git" in seen.content and "read-only in the sandbox" in seen.content
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt"]
    await sandboxing.run(configured.tool_context(workspace, approved=True), "git init -q")
    assert (workspace / ".git" / "HEAD").is_file()


async def test_a_placeholder_something_was_written_into_stays(box, workspace):
    await sandboxing.run(configured.tool_context(workspace, approved=True), "mkdir .vscode && echo '{}' > .vscode/x")
    await sandboxing.run(configured.tool_context(workspace), "true")
    assert (workspace / ".vscode" / "x").read_text() == "{}\n"


async def test_a_git_commondir_made_unapproved_is_removed_after_the_command(box, workspace):
    _repo(workspace)
    result = await sandboxing.run(configured.tool_context(workspace), "echo ../elsewhere > .git/commondir")
    assert not (workspace / ".git" / "commondir").exists()
    assert "put back as they were: .git/commondir" in result.content


async def test_a_symlinked_control_path_is_protected_where_it_leads(box, tmp_path, workspace):
    _repo(workspace)
    hooks = workspace / ".git" / "hooks"
    shutil.rmtree(hooks)
    (workspace / "myhooks").mkdir()
    (workspace / "myhooks" / "pre-commit").write_text("ok\n")
    hooks.symlink_to("../myhooks")
    outside = tmp_path / "envrc"
    outside.write_text("ok\n")
    (workspace / ".envrc").symlink_to(outside)
    result = await sandboxing.run(configured.tool_context(workspace), "; ".join([
        "echo evil >> .git/hooks/pre-commit", "echo evil >> myhooks/pre-commit", "echo evil >> .envrc",
        "rm .git/hooks .envrc && mkdir .git/hooks && echo evil > .git/hooks/pre-commit && echo evil > .envrc",
    ]))
    assert (workspace / "myhooks" / "pre-commit").read_text() == "ok\n"
    assert outside.read_text() == "ok\n"
    assert hooks.readlink() == Path("../myhooks") and (workspace / ".envrc").readlink() == outside
    assert "put back as they were: .git/hooks, .envrc" in result.content


async def test_a_virtualenv_activation_scripts_and_site_packages_are_read_only(box, workspace):
    venv = workspace / ".venv"
    site = venv / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "bin" / "activate").write_text("ok\n")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    result = await sandboxing.run(configured.tool_context(workspace), "; ".join([
        f"echo 'import os' > {site.relative_to(workspace)}/evil.pth", "echo evil >> .venv/bin/activate",
        "mv .venv/lib .venv/lib2", "mv .venv v2", "echo home = /tmp > .venv/pyvenv.cfg",
    ]))
    assert list(site.iterdir()) == [] and (venv / "bin" / "activate").read_text() == "ok\n", result.content
    assert (venv / "lib").is_dir() and (venv / "pyvenv.cfg").read_text() == "home = /usr/bin\n"
    assert "site-packages is read-only in the sandbox" in result.content


def test_the_control_binds_come_after_the_workspace_with_each_parent_pinned(workspace):
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("")
    guard = control_paths.guard(workspace)
    try:
        argv = sandbox.command_line("bwrap", ["true"], workspace=workspace, hidden=(),
                                    control=guard.mounts)
    finally:
        control_paths.release(guard)
    ws = str(workspace.resolve())
    at = argv.index(ws)  # --bind WS WS
    assert argv[at - 1] == "--bind"
    assert argv.index(f"{ws}/.git/hooks") > at and argv.index(f"{ws}/.git") > at
    config = argv.index(f"{ws}/.git/config")
    assert argv[config - 1] == "--ro-bind" and argv[argv.index(f"{ws}/.git") - 1] == "--bind"


async def test_a_missing_editor_or_direnv_file_made_unapproved_is_removed_and_no_phantom_shows(box, workspace):
    _repo(workspace)
    ctx = configured.tool_context(workspace)
    listing = await sandboxing.run(ctx, "ls -A")
    shown = set(listing.content.split())
    assert not shown & {".envrc", ".vscode", ".idea", ".husky", ".githooks", ".gitmodules"}, listing.content
    made = await sandboxing.run(ctx, "mkdir .vscode && echo '{}' > .vscode/tasks.json && echo x > .envrc")
    assert not (workspace / ".vscode").exists() and not (workspace / ".envrc").exists()
    assert "put back as they were:" in made.content and ".vscode" in made.content and ".envrc" in made.content
    approved = await sandboxing.run(configured.tool_context(workspace, approved=True), "echo x > .envrc")
    assert (workspace / ".envrc").read_text() == "x\n", approved.content
