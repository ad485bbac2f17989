"""Each sandboxed command's network namespace, made before the command is asked for.

bubblewrap's ``--unshare-net`` makes the command an empty network namespace while it starts,
and the kernel's set-up of one (each subsystem's tables, its sysctls) is 1.5-2 ms of the ~10
ms bwrap adds to ``true`` (measured here, Linux 6.x). So a worker that may make namespaces
makes the next command's as the previous one ends, in a thread of its own (``unshare`` moves
only the calling thread), with its loopback up as bwrap brings it up: ``fresh`` hands it to
one command, whose child enters it between fork and exec (``enter``) and runs bwrap without
``--unshare-net``. Each command still has a namespace of its own, entered by no process
before and shared with none (the worker keeps only a descriptor, closed when the command
is over); ``--network`` still reaches the outside only through the bound proxy
socket. Where no namespace can be made ahead (a worker without ``CAP_SYS_ADMIN``), or none is
ready (the first command, or two at once), bwrap makes it as before.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
IFREQ = "16sH14x"  # struct ifreq: the name, then ifr_flags

_LIBC = ctypes.CDLL(None, use_errno=True)
_LOCK = threading.Lock()
# One thread makes them, started once: starting a thread per command waits for it to run.
_MAKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-netns")
_ready: list[int] = []  # descriptors of namespaces made ahead, at most one
_state = {"making": False, "refused": ""}  # refused: why none can be made here, once seen


def _make() -> int:
    """In the maker thread: a new network namespace, loopback up; its descriptor. The thread
    goes back to the worker's namespace after, so no process or thread is in the new one."""
    home = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)  # the worker's (its main thread's)
    fd = -1
    try:
        _call(_LIBC.unshare, CLONE_NEWNET)
        fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:  # in the new namespace
            _, flags = struct.unpack(IFREQ, fcntl.ioctl(probe, SIOCGIFFLAGS, struct.pack(IFREQ, b"lo", 0)))
            fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))  # 127.0.0.1, ::1
        _call(_LIBC.setns, home, CLONE_NEWNET)
    except OSError:
        if fd >= 0:
            os.close(fd)
        raise
    finally:
        os.close(home)
    return fd


def _fill() -> None:
    try:
        fd = _make()
    except (OSError, AttributeError) as err:  # AttributeError: a libc without unshare
        with _LOCK:
            _state.update(making=False, refused=str(err))
        return
    with _LOCK:
        _ready.append(fd)
        _state["making"] = False


def _replenish() -> None:
    """Starts making the next namespace, unless one is ready or being made, or none can be."""
    with _LOCK:
        if _ready or _state["making"] or _state["refused"]:
            return
        _state["making"] = True
    _MAKER.submit(_fill)


@contextmanager
def fresh() -> Iterator[int | None]:
    """A namespace made ahead for one command (its descriptor, closed on leaving), or None:
    bwrap makes one. The next is made on leaving, once the command is over."""
    with _LOCK:
        fd = _ready.pop() if _ready else None
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)
        _replenish()


def enter(fd: int) -> None:
    """In the command's child, before exec: into the namespace ``fd`` (system calls only)."""
    _call(_LIBC.setns, fd, CLONE_NEWNET)


def _call(function: Callable[..., int], *args: int) -> None:
    if function(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
