"""The seccomp filter every sandboxed command runs under: no setuid or setgid file, ever.

A file made in the workspace lives on the host's disk, so ``cp /bin/sh x; chmod 4755 x``
run as root would leave a root shell there for anyone who can reach it (the sandbox's own
mounts are ``nosuid``; the host's are not). Taking the bits off after the command
(``tools/sandbox_setuid.py``) leaves a window while it runs; this filter makes the kernel
refuse, with ``EPERM``, every call that would set them, so none is made at all:

- ``chmod``, ``fchmod``, ``fchmodat``, ``fchmodat2`` and ``mknod``, ``mknodat`` whose mode
  has ``S_ISUID`` or ``S_ISGID`` (a directory's ``g+s`` too: the filter cannot tell);
- ``open``, ``creat``, ``openat`` creating a file (``O_CREAT`` or ``O_TMPFILE``) with them;
- ``openat2`` and ``io_uring_setup`` get ``ENOSYS``: a filter cannot read ``openat2``'s
  ``struct open_how`` nor an io_uring's queued ``openat``, and libc falls back to ``openat``.

File capabilities (``security.capability``) need ``CAP_SETFCAP``, which ``--cap-drop ALL``
takes away. The program is classic BPF written out here (no libseccomp), for x86_64 and
aarch64; a syscall of another ABI (i386 on x86_64, arm32 on aarch64) kills the process, and
an x32 one is refused with ``ENOSYS``, as on kernels built without x32. bubblewrap loads it
from a file descriptor (``bwrap --seccomp FD``), one fresh descriptor per command.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# Classic BPF opcodes (linux/bpf_common.h) and seccomp's return values (linux/seccomp.h).
LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS: A = seccomp_data[k:k+4]
JEQ_K, JGE_K, JSET_K = 0x15, 0x35, 0x45  # BPF_JMP | BPF_JEQ / BPF_JGE / BPF_JSET | BPF_K
RET_K = 0x06
RET_ALLOW, RET_KILL_PROCESS, RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little endian
# on both arches, so an argument's low 32 bits are at 16 + 8 * i).
NR, ARCH = 0, 4
AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64 = 0xC000003E, 0xC00000B7
X32_SYSCALL_BIT = 0x40000000
PRIVILEGE_BITS = stat.S_ISUID | stat.S_ISGID
CREATES = os.O_CREAT | 0o20000000  # O_CREAT | __O_TMPFILE, the same on both arches


def _arg(i: int) -> int:
    return 16 + 8 * i


@dataclass(frozen=True)
class Mode:
    """Refused if argument ``mode`` has a privilege bit."""

    mode: int


@dataclass(frozen=True)
class Creates:
    """Refused if argument ``flags`` creates a file and argument ``mode`` has a privilege bit."""

    flags: int
    mode: int


@dataclass(frozen=True)
class Absent:
    """Refused with ENOSYS, as if the kernel had no such call."""


Rule = Mode | Creates | Absent
RULES: dict[str, Rule] = {
    "chmod": Mode(1), "fchmod": Mode(1), "fchmodat": Mode(2), "fchmodat2": Mode(2),
    "mknod": Mode(1), "mknodat": Mode(2), "creat": Mode(1),
    "open": Creates(1, 2), "openat": Creates(2, 3),
    "openat2": Absent(), "io_uring_setup": Absent(),
}
# Syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h).
SYSCALLS: dict[int, dict[str, int]] = {
    AUDIT_ARCH_X86_64: {
        "open": 2, "creat": 85, "chmod": 90, "fchmod": 91, "mknod": 133, "openat": 257, "mknodat": 259,
        "fchmodat": 268, "io_uring_setup": 425, "openat2": 437, "fchmodat2": 452,
    },
    AUDIT_ARCH_AARCH64: {
        "mknodat": 33, "fchmod": 52, "fchmodat": 53, "openat": 56, "io_uring_setup": 425, "openat2": 437,
        "fchmodat2": 452,
    },
}


class _Assembler:
    """Instructions with forward jumps to named labels, resolved when the program is done."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def op(self, code: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        self.code.append((code, jt, jf, k))

    def assemble(self) -> bytes:
        def offset(at: int, target: str | int) -> int:
            if isinstance(target, int):
                return target
            jump = self.labels[target] - at - 1
            assert 0 <= jump <= 255, f"jump to {target} out of range"
            return jump

        return b"".join(
            struct.pack("<HBBI", code, offset(at, jt), offset(at, jf), k)
            for at, (code, jt, jf, k) in enumerate(self.code)
        )


@functools.cache
def program() -> bytes:
    """The filter as an array of ``struct sock_filter``, what ``bwrap --seccomp`` reads."""
    asm = _Assembler()
    asm.op(LD_W_ABS, ARCH)
    for arch in SYSCALLS:
        asm.op(JEQ_K, arch, jt=f"arch {arch}")
    asm.op(RET_K, RET_KILL_PROCESS)
    for arch, numbers in SYSCALLS.items():
        asm.label(f"arch {arch}")
        asm.op(LD_W_ABS, NR)
        if arch == AUDIT_ARCH_X86_64:
            asm.op(JGE_K, X32_SYSCALL_BIT, jt="enosys")
        for name, nr in numbers.items():
            match RULES[name]:
                case Mode(mode):
                    target = f"mode {mode}"
                case Creates(flags, mode):
                    target = f"creates {flags} {mode}"
                case Absent():
                    target = "enosys"
            asm.op(JEQ_K, nr, jt=target)
        asm.op(RET_K, RET_ALLOW)
    for flags, mode in sorted({(r.flags, r.mode) for r in RULES.values() if isinstance(r, Creates)}):
        asm.label(f"creates {flags} {mode}")
        asm.op(LD_W_ABS, _arg(flags))
        asm.op(JSET_K, CREATES, jt=f"mode {mode}")
        asm.op(RET_K, RET_ALLOW)
    for mode in sorted({r.mode for r in RULES.values() if not isinstance(r, Absent)}):
        asm.label(f"mode {mode}")
        asm.op(LD_W_ABS, _arg(mode))
        asm.op(JSET_K, PRIVILEGE_BITS, jt="eperm")
        asm.op(RET_K, RET_ALLOW)
    asm.label("eperm")
    asm.op(RET_K, RET_ERRNO | errno.EPERM)
    asm.label("enosys")
    asm.op(RET_K, RET_ERRNO | errno.ENOSYS)
    return asm.assemble()


@contextmanager
def program_fd() -> Iterator[int]:
    """A descriptor to read the program from, at its start, for one ``bwrap`` (which reads
    it to the end): pass it to the child (``pass_fds``); it is closed on leaving."""
    fd = os.memfd_create("agent-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program())
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)
