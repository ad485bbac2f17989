"""Setuid and setgid bits come off the workspace's files a command made or changed, and
nothing else changes: not a directory's, not an older file's, not a file outside that a link
in the workspace points to."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from tools.sandbox_setuid import strip_setuid


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_setuid_and_setgid_files_lose_the_bits_wherever_they_are(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    for name, mode in (("top", 0o4755), ("a/b/deep", 0o6750), ("a/group", 0o2711), ("plain", 0o755)):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(mode)
    (tmp_path / "a").chmod(0o2775)
    assert strip_setuid(tmp_path, since=0) == [
        "a/b/deep (setuid removed)", "a/group (setgid removed)", "top (setuid removed)",
    ]
    assert (_mode(tmp_path / "top"), _mode(tmp_path / "a/b/deep"), _mode(tmp_path / "a/group")) == (0o755, 0o750, 0o711)
    assert _mode(tmp_path / "plain") == 0o755 and _mode(tmp_path / "a") == 0o2775  # a directory keeps g+s
    assert strip_setuid(tmp_path, since=0) == []


def test_links_never_change_a_file_outside_the_workspace(tmp_path):
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.write_text("#!/bin/sh\n")
    outside.chmod(0o4755)
    (workspace / "symlink").symlink_to(outside)
    os.link(outside, workspace / "hardlink")
    assert strip_setuid(workspace, since=0) == ["hardlink (setuid, a hard link: removed)"]
    assert _mode(outside) == 0o4755  # the system binary a link pointed at keeps its bit
    assert not (workspace / "hardlink").exists() and (workspace / "symlink").is_symlink()


def test_a_setuid_file_older_than_the_command_keeps_its_bit(tmp_path):
    (tmp_path / "chroot-su").write_text("#!/bin/sh\n")
    (tmp_path / "chroot-su").chmod(0o4755)
    assert strip_setuid(tmp_path, since=time.time() + 5) == []  # the command started after it was made
    assert _mode(tmp_path / "chroot-su") == 0o4755
    assert strip_setuid(tmp_path, since=time.time() - 5) == ["chroot-su (setuid removed)"]


def test_an_empty_or_missing_workspace_is_fine(tmp_path):
    assert strip_setuid(tmp_path, since=0) == []
    assert strip_setuid(tmp_path / "gone", since=0) == []
