"""No setuid or setgid file exists on the host, at any moment.

In the sandbox the kernel refuses every call that would set the bits (the seccomp filter of
``tools/sandbox_seccomp.py``): a host-side poller never sees one while a command tries, GNU
tar extracts without them, and file capabilities are refused too (``--cap-drop ALL``). The
filter's decisions are also checked one syscall at a time, loaded in a child process.

As a second line, the bits come off the workspace's files a command made or changed, and
nothing else changes: not a directory's, not an older file's, not a file outside that a link
in the workspace points to."""

from __future__ import annotations

import asyncio
import errno
import io
import json
import os
import platform
import stat
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

from core.settings import SandboxSettings
from tests import configured, sandboxing
from tools import sandbox, sandbox_seccomp, shell
from tools.sandbox_setuid import strip_setuid

PRIVILEGE_BITS = stat.S_ISUID | stat.S_ISGID
ATTEMPTS = "; ".join(f"{attempt} 2>&1 || echo refused: {name}" for name, attempt in (
    ("chmod 4755", "cp /bin/sh sh-copy && chmod 4755 sh-copy"),
    ("chmod g+s", "chmod g+s sh-copy"),
    ("install -m", "install -m 6755 /bin/sh installed"),
    ("O_CREAT", "python3 -c \"import os; os.open('made', os.O_CREAT | os.O_WRONLY, 0o4755)\""),
    ("O_TMPFILE", "python3 -c \"import os; os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o2755)\""),
    ("mknod", "python3 -c \"import os, stat; os.mknod('node', stat.S_IFREG | 0o4755)\""),
))


@pytest.fixture
def box(monkeypatch) -> sandbox.SandboxStatus:
    return sandboxing.require(monkeypatch)


def _privileged(root: Path) -> list[str]:
    """The files under ``root`` with a setuid or setgid bit, as a host-side poller sees them."""
    found: list[str] = []
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # made and gone between the listing and the stat
                if stat.S_ISDIR(info.st_mode):
                    stack.append(entry.path)
                if info.st_mode & PRIVILEGE_BITS:
                    found.append(f"{entry.path} {stat.filemode(info.st_mode)}")
    return found


async def test_no_setuid_file_exists_on_the_host_while_a_command_tries_to_make_one(box, tmp_path):
    seen: list[str] = []
    marked_scans = 0  # scans that saw the marker the command writes after its attempts
    stop = threading.Event()

    def poll() -> None:
        nonlocal marked_scans
        while not stop.is_set():
            marked = (tmp_path / "attempted").exists()
            seen.extend(_privileged(tmp_path))
            marked_scans += int(marked)
            stop.wait(0.05)

    poller = threading.Thread(target=poll)
    poller.start()
    ctx = configured.tool_context(workspace=tmp_path)
    command = asyncio.create_task(sandboxing.run(ctx, f"{ATTEMPTS}; touch attempted; sleep 3"))
    try:
        deadline = time.monotonic() + 30
        while marked_scans < 3 and not command.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert marked_scans >= 3 and not command.done(), "the poller never watched the command after its attempts"
        result = await command
    finally:
        stop.set()
        poller.join()
    assert seen == []
    for name in ("chmod 4755", "chmod g+s", "install -m", "O_CREAT", "O_TMPFILE", "mknod"):
        assert f"refused: {name}" in result.content
    assert "Operation not permitted" in result.content and "setuid/setgid bits taken off" not in result.content
    assert stat.S_IMODE((tmp_path / "sh-copy").stat().st_mode) == 0o755  # the copy is there, plain


async def test_tar_extracts_a_setuid_file_without_the_bit(box, tmp_path):
    with tarfile.open(tmp_path / "tools.tar", "w") as archive:
        for name, mode in (("su", 0o4755), ("sg", 0o2755)):
            member = tarfile.TarInfo(name)
            member.size, member.mode = 10, mode
            archive.addfile(member, io.BytesIO(b"#!/bin/sh\n"))
    result = await sandboxing.run(configured.tool_context(workspace=tmp_path), "tar xpf tools.tar")
    # GNU tar (1.34) writes the file, fails to chmod it (left 0700), says so and exits with 2.
    assert "su: Cannot change mode to rwsr-xr-x: Operation not permitted" in result.content
    assert "sg: Cannot change mode to rwxr-sr-x: Operation not permitted" in result.content
    assert result.exit_code == 2
    for name in ("su", "sg"):
        assert (tmp_path / name).read_bytes() == b"#!/bin/sh\n"
        assert not (tmp_path / name).stat().st_mode & PRIVILEGE_BITS


# struct vfs_cap_data, revision 2: effective, permitted CAP_SETUID (7).
CAPABILITY = (0x02000001).to_bytes(4, "little") + (1 << 7).to_bytes(4, "little") + bytes(12)


async def test_file_capabilities_are_refused(box, tmp_path):
    if os.getuid() == 0:  # the value is one the kernel takes, from a process that may
        (tmp_path / "control").write_text("")
        os.setxattr(tmp_path / "control", "security.capability", CAPABILITY)
        (tmp_path / "control").unlink()
    (tmp_path / "tool").write_text("#!/bin/sh\n")
    command = f"python3 -c \"import os; os.setxattr('tool', 'security.capability', {CAPABILITY!r})\""
    result = await sandboxing.run(configured.tool_context(workspace=tmp_path), command)
    assert "PermissionError: [Errno 1] Operation not permitted" in result.content
    with pytest.raises(OSError) as missing:
        os.getxattr(tmp_path / "tool", "security.capability")
    assert missing.value.errno == errno.ENODATA


def test_a_sandbox_whose_filter_cannot_load_says_so_in_its_notice(tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text('#!/bin/sh\ncase " $* " in *" --seccomp "*) echo "bwrap: seccomp: Invalid argument" >&2; exit 1;; esac\n')
    fake.chmod(0o755)
    found = sandbox.probe(SandboxSettings.from_env({"AGENT_SANDBOX": "auto", "AGENT_BWRAP": str(fake)}))
    assert found.active and not found.filtered
    assert "without its seccomp filter (bubblewrap is refused here: bwrap: seccomp: Invalid argument)" in found.notice()
    assert "--seccomp" not in shell.command_argv("true", configured.tool_context(workspace=tmp_path), found)


CHILD = r"""
import ctypes, errno, json, os, sys
program, workspace, numbers = bytes.fromhex(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)

class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.byref(Prog(len(program) // 8, program)), 0, 0) == 0  # SECCOMP_MODE_FILTER
os.chdir(workspace)

def raw(nr, *args):
    if libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args]) == -1:
        raise OSError(ctypes.get_errno(), "")

def outcome(call):
    try:
        call()
        return "ok"
    except OSError as err:
        return errno.errorcode[err.errno]

open("f", "w").close()
fd, how, AT_FDCWD = os.open("f", os.O_RDONLY), ctypes.create_string_buffer(24), -100
calls = {
    "chmod 4755": lambda: os.chmod("f", 0o4755),
    "chmod 2755": lambda: os.chmod("f", 0o2755),
    "chmod 1755": lambda: os.chmod("f", 0o1755),
    "fchmod 6755": lambda: os.fchmod(fd, 0o6755),
    "fchmodat2 4755": lambda: raw(numbers["fchmodat2"], AT_FDCWD, b"f", 0o4755, 0),
    "open O_CREAT 4755": lambda: os.open("g", os.O_CREAT | os.O_WRONLY, 0o4755),
    "open O_CREAT 755": lambda: os.open("g", os.O_CREAT | os.O_WRONLY, 0o755),
    "open O_TMPFILE 2755": lambda: os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o2755),
    "openat 4755 without O_CREAT": lambda: raw(numbers["openat"], AT_FDCWD, b"f", os.O_RDONLY, 0o4755),
    "mknod 4755": lambda: os.mknod("n", 0o100000 | 0o4755),
    "mknod 755": lambda: os.mknod("n", 0o100000 | 0o755),
    "openat2": lambda: raw(numbers["openat2"], AT_FDCWD, b"f", how, 24),
    "io_uring_setup": lambda: raw(numbers["io_uring_setup"], 1, how),
}
if "creat" in numbers:
    calls["creat 4755"] = lambda: raw(numbers["creat"], b"c", 0o4755)
    calls["x32 open"] = lambda: raw(0x40000000 | numbers["open"], b"f", 0)
print(json.dumps({name: outcome(call) for name, call in calls.items()}))
"""
ARCHES = {"x86_64": sandbox_seccomp.AUDIT_ARCH_X86_64, "aarch64": sandbox_seccomp.AUDIT_ARCH_AARCH64}


def test_the_filter_refuses_exactly_the_calls_that_would_set_a_privilege_bit(tmp_path):
    if platform.machine() not in ARCHES or sys.platform != "linux":
        sandboxing.skip("the filter is for Linux x86_64 and aarch64")
    numbers = sandbox_seccomp.SYSCALLS[ARCHES[platform.machine()]]
    argv = [sys.executable, "-c", CHILD, sandbox_seccomp.program().hex(), str(tmp_path), json.dumps(numbers)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    expected = {
        "chmod 4755": "EPERM", "chmod 2755": "EPERM", "chmod 1755": "ok", "fchmod 6755": "EPERM",
        "fchmodat2 4755": "EPERM",
        "open O_CREAT 4755": "EPERM", "open O_CREAT 755": "ok", "open O_TMPFILE 2755": "EPERM",
        "openat 4755 without O_CREAT": "ok", "mknod 4755": "EPERM", "mknod 755": "ok",
        "openat2": "ENOSYS", "io_uring_setup": "ENOSYS",
    }
    if platform.machine() == "x86_64":
        expected |= {"creat 4755": "EPERM", "x32 open": "ENOSYS"}
    assert json.loads(done.stdout) == expected
    assert not any(path.stat().st_mode & PRIVILEGE_BITS for path in tmp_path.iterdir())


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
