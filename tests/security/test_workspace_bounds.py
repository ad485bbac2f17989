import os
from pathlib import Path

import pytest

from tests import configured
from tools import file as file_tool
from tools import file_actions
from tools.beneath import refuse_symlink, resolve_beneath
from tools.file import FileArgs


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("SECRET token\n")
    return directory


async def _file(ws: Path, **kwargs):
    return await file_tool.TOOL.handler(FileArgs(**kwargs), configured.tool_context(workspace=ws))


def _refused(result, reason: str = "outside the workspace") -> bool:
    return result.status == "error" and reason in result.content and "SECRET" not in result.content


async def test_parent_paths_are_refused_for_every_action(ws, outside):
    for kwargs in (
        {"action": "read", "path": "../outside/secret.txt"},
        {"action": "write", "path": "../outside/new.txt", "content": "x"},
        {"action": "edit", "path": "../outside/secret.txt", "old": "SECRET", "new": "x"},
        {"action": "list", "path": ".."},
        {"action": "grep", "path": "../outside", "pattern": "SECRET"},
    ):
        assert _refused(await _file(ws, **kwargs)), kwargs
    assert not (outside / "new.txt").exists()
    assert (outside / "secret.txt").read_text() == "SECRET token\n"


async def test_absolute_paths_outside_the_workspace_are_refused(ws, outside):
    assert _refused(await _file(ws, action="read", path=str(outside / "secret.txt")))
    assert _refused(await _file(ws, action="write", path=str(outside / "new.txt"), content="x"))
    assert not (outside / "new.txt").exists()


async def test_a_symlink_to_etc_is_refused(ws):
    (ws / "etc").symlink_to("/etc")
    assert _refused(await _file(ws, action="read", path="etc/passwd"))
    assert _refused(await _file(ws, action="list", path="etc"))
    assert _refused(await _file(ws, action="write", path="etc/agent-was-here", content="x"))
    assert not Path("/etc/agent-was-here").exists()


async def test_a_symlinked_directory_pointing_out_is_refused(ws, outside):
    (ws / "out").symlink_to(outside, target_is_directory=True)
    assert _refused(await _file(ws, action="read", path="out/secret.txt"))
    assert _refused(await _file(ws, action="write", path="out/deep/new.txt", content="x"))
    assert _refused(await _file(ws, action="list", path="out"))
    assert not (outside / "deep").exists()


async def test_writing_through_a_symlink_is_refused_even_inside_the_workspace(ws, outside):
    (ws / "real.txt").write_text("real\n")
    (ws / "link.txt").symlink_to(ws / "real.txt")
    (ws / "leak.txt").symlink_to(outside / "secret.txt")
    (ws / "dangling.txt").symlink_to(ws / "not-yet.txt")
    result = await _file(ws, action="write", path="link.txt", content="changed")
    assert _refused(result, "symlink")
    assert _refused(await _file(ws, action="edit", path="link.txt", old="real", new="x"), "symlink")
    assert _refused(await _file(ws, action="write", path="dangling.txt", content="x"), "symlink")
    assert _refused(await _file(ws, action="write", path="leak.txt", content="x"))
    assert (ws / "real.txt").read_text() == "real\n"
    assert not (ws / "not-yet.txt").exists()
    assert (outside / "secret.txt").read_text() == "SECRET token\n"


async def test_reading_through_a_symlink_inside_the_workspace_still_works(ws):
    (ws / "real.txt").write_text("real\n")
    (ws / "link.txt").symlink_to("real.txt")
    assert (await _file(ws, action="read", path="link.txt")).content == "real\n"


CHECK = resolve_beneath


def _swap_after_check(monkeypatch, swap):
    """Make the workspace change between the bounds check and the open."""
    check = CHECK

    def check_then_swap(root: Path, raw: str) -> Path:
        path = check(root, raw)
        swap()
        return path

    monkeypatch.setattr(file_tool, "resolve_beneath", check_then_swap)


async def test_a_file_swapped_for_a_symlink_after_the_check_is_refused(ws, outside, monkeypatch):
    target = ws / "a.txt"
    target.write_text("harmless\n")

    def swap() -> None:
        target.unlink()
        target.symlink_to(outside / "secret.txt")

    for kwargs in (
        {"action": "read"},
        {"action": "edit", "old": "SECRET", "new": "pwned"},
    ):
        _swap_after_check(monkeypatch, swap)
        target.unlink()
        target.write_text("harmless SECRET\n" if kwargs["action"] == "edit" else "harmless\n")
        result = await _file(ws, path="a.txt", **kwargs)
        assert _refused(result, "symlink"), kwargs
    assert (outside / "secret.txt").read_text() == "SECRET token\n"


async def test_a_file_swapped_for_a_symlink_before_a_write_is_not_written_through(ws, outside, monkeypatch):
    target = ws / "a.txt"
    target.write_text("harmless\n")
    # The final symlink check passes on the real file; the swap comes right after it.

    def check_then_swap(root: Path, raw: str) -> None:
        refuse_symlink(root, raw)
        target.unlink()
        target.symlink_to(outside / "secret.txt")

    monkeypatch.setattr(file_actions, "refuse_symlink", check_then_swap)
    result = await _file(ws, action="write", path="a.txt", content="pwned")
    assert _refused(result, "symlink")
    assert (outside / "secret.txt").read_text() == "SECRET token\n"


async def test_a_directory_swapped_for_a_symlink_after_the_check_is_refused(ws, outside, monkeypatch):
    sub = ws / "sub"

    def swap() -> None:
        (ws / "sub").rename(ws / "moved")
        sub.symlink_to(outside, target_is_directory=True)

    for kwargs in (
        {"action": "read", "path": "sub/secret.txt"},
        {"action": "write", "path": "sub/new.txt", "content": "pwned"},
        {"action": "write", "path": "sub/deeper/new.txt", "content": "pwned"},
        {"action": "list", "path": "sub"},
    ):
        if sub.is_symlink():
            sub.unlink()
        if (ws / "moved").exists():
            (ws / "moved").rename(sub)
        sub.mkdir(exist_ok=True)
        (sub / "secret.txt").write_text("inside\n")
        _swap_after_check(monkeypatch, swap)
        result = await _file(ws, **kwargs)
        assert _refused(result, "symlink"), kwargs
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_reading_a_fifo_is_refused_without_hanging(ws):
    os.mkfifo(ws / "pipe")
    result = await _file(ws, action="read", path="pipe")
    assert result.status == "error" and "not a regular file" in result.content


async def test_write_still_creates_missing_parent_directories(ws):
    result = await _file(ws, action="write", path="a/b/c.txt", content="hi")
    assert result.status == "ok" and (ws / "a/b/c.txt").read_text() == "hi"
