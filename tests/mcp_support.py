"""Real MCP servers for the tests: the PyPI ones (``mcp-server-time``, ``mcp-server-git``) run
from this venv, and tests/mcp_test_server.py over stdio or streamable HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from contracts.mcp import McpServerConfig

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TEST_SERVER = ROOT / "tests" / "mcp_test_server.py"


def time_server() -> McpServerConfig:
    return McpServerConfig(command=str(BIN / "mcp-server-time"), args=["--local-timezone", "UTC"])


def git_server(repo: Path) -> McpServerConfig:
    return McpServerConfig(command=str(BIN / "mcp-server-git"), args=["--repository", str(repo)])


def kit_stdio(marker: Path | None = None, *, flags: Sequence[str] = (), **fields) -> McpServerConfig:
    """The test server over stdio; ``flags``: more of its options (``--legacy``)."""
    args = [str(TEST_SERVER)] + (["--marker", str(marker)] if marker else []) + list(flags)
    return McpServerConfig(command=sys.executable, args=args, **fields)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def kit_http(marker: Path | None = None, transport: str = "http", flags: Sequence[str] = ()) -> Iterator[str]:
    """The test server on streamable HTTP (or ``transport="sse"``); yields its URL. ``flags``: more
    of its options (``--auth TOKEN``)."""
    port = free_port()
    args = [sys.executable, str(TEST_SERVER), f"--{transport}", str(port)] + (["--marker", str(marker)] if marker else [])
    args += list(flags)
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, "the MCP test server exited"
                assert time.monotonic() < deadline, "the MCP test server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"
    finally:
        proc.terminate()
        proc.wait(10)


def pids(marker: Path) -> list[int]:
    return [int(p.name.removeprefix("pid-")) for p in marker.glob("pid-*")]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"  # a zombie has exited
    except (FileNotFoundError, IndexError):
        return False


def marks(marker: Path, tool: str) -> int:
    return len(list(marker.glob(f"{tool}-*")))
