"""`run --demo` as a person sees it: under a real pseudo-terminal (the bytes played onto a
screen), and with its output going to a pipe."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from fakes.scripted import demo_steps
from tests.cli.test_cli import cli
from tests.cli.vt import Screen, strip_ansi

ROOT = Path(__file__).resolve().parents[2]
COLUMNS, LINES = 100, 30
INSTRUCTION = "Take notes on what is in this directory"
MODEL_LINES = [step.text for step in demo_steps(INSTRUCTION) if step.text]
SPINNER = {chr(c) for c in range(0x2800, 0x2900)}  # rich's "dots" spinner is Braille


def run_in_terminal(args: list[str], env: dict[str, str], timeout_s: float = 90) -> tuple[int, str]:
    """Run ``args`` attached to a pseudo-terminal of COLUMNS x LINES; (exit code, all it wrote)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT, close_fds=True)
    os.close(slave)
    written = b""
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal's other side closed: the program is gone
                    break
                if not chunk:
                    break
                written += chunk
            elif proc.poll() is not None:
                break
        else:
            raise AssertionError(f"still running after {timeout_s}s:\n{written.decode(errors='replace')[-2000:]}")
        return proc.wait(10), written.decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)


async def test_run_demo_in_a_terminal_shows_each_model_line_once_and_leaves_no_status_line(client, workspace):
    env = dict(
        os.environ, TEMPORAL_ADDRESS=client.service_client.config.target_host, TEMPORAL_NAMESPACE="default",
        TERM="xterm", COLUMNS=str(COLUMNS), LINES=str(LINES),
    )
    command = [sys.executable, str(ROOT / "starter.py"), "run", "--demo", "--workspace", str(workspace), INSTRUCTION]
    code, written = await asyncio.to_thread(run_in_terminal, command, env)
    screen = Screen(COLUMNS).feed(written).text()
    assert code == 0, screen
    for line in MODEL_LINES:
        assert screen.count(line) == 1, f"{line!r} is shown {screen.count(line)} times:\n{screen}"
    assert "DONE (5 turns" in screen  # the note read back when the task was asked to verify
    # Once in the scrollback, a reply is never drawn again, not even for a moment.
    plain = strip_ansi(written)
    assert MODEL_LINES[0] not in plain[plain.index("→ shell"):]
    # The status line was there while the task ran (with its spinner)...
    assert "thinking · turn 1" in plain and SPINNER & set(written)
    # ...and is gone from the screen at the end, as is every spinner frame.
    assert "· turn " not in screen and not SPINNER & set(screen), screen
    assert screen.rstrip().endswith("a short note quoting the instruction.")


async def test_run_demo_into_a_pipe_has_no_status_line_or_escape_sequences(client, workspace):
    code, out, err = await cli(client, "run", "--demo", "--workspace", str(workspace), INSTRUCTION,
                               TERM="xterm", COLUMNS=str(COLUMNS))
    assert code == 0, err
    for line in MODEL_LINES:
        assert out.count(line) == 1, out
    assert "\x1b" not in out and "· turn " not in out and not SPINNER & set(out + err)
