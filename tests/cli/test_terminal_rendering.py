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

from fakes.scripted import demo_steps, tool
from tests.cli.test_cli import cli
from tests.cli.vt import Screen, strip_ansi
from tests.workflows.harness import scripted_worker

ROOT = Path(__file__).resolve().parents[2]
COLUMNS, LINES = 100, 30
INSTRUCTION = "Take notes on what is in this directory"
MODEL_LINES = [step.text for step in demo_steps(INSTRUCTION) if step.text]
SPINNER = {chr(c) for c in range(0x2800, 0x2900)}  # rich's "dots" spinner is Braille


def run_in_terminal(args: list[str], env: dict[str, str], timeout_s: float = 90) -> tuple[int, str]:
    """Run ``args`` attached to a pseudo-terminal of COLUMNS x LINES; (exit code, all it wrote)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    # Input is not the terminal: `run` follows its one task and ends, as without a person
    # (at a terminal it would stay in the conversation: tests/cli/test_conversation.py).
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env, cwd=ROOT,
                            close_fds=True)
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
    # Every turn is numbered as rewind takes it, and the note the demo writes is shown as a diff.
    assert [line.strip() for line in screen.splitlines() if "── turn" in line] == [f"── turn {n} ──" for n in range(1, 6)]  # 5 turns, as DONE says
    assert "→ file write AGENT_DEMO.md" in screen and "+++ b/AGENT_DEMO.md" in screen and "+# Agent demo" in screen


EDIT = {"action": "edit", "path": "app.py", "old": "    return 1\n", "new": "    return 2\n"}


def assert_edit_shown_as_a_diff(written: str) -> None:
    screen = Screen(COLUMNS).feed(written).text()
    rows = [line.rstrip() for line in screen.splitlines()]
    at = rows.index("→ file edit app.py")
    assert rows[at + 1:at + 6] == ["    --- a/app.py", "    +++ b/app.py", "    @@ @@", "    -    return 1",
                                   "    +    return 2"], screen
    assert '"old"' not in screen and "── turn 1 ──" in rows and "── turn 2 ──" in rows
    assert "\x1b[31m-    return 1" in written and "\x1b[32m+    return 2" in written  # red, then green


async def test_a_file_edit_shows_as_a_unified_diff_in_run_and_watch(client, task_queue, workspace):
    (workspace / "app.py").write_text("def f():\n    return 1\n")
    steps = [tool("file", **EDIT), tool("message", type="result", text="edited")]
    env = dict(
        os.environ, TEMPORAL_ADDRESS=client.service_client.config.target_host, TEMPORAL_NAMESPACE="default",
        AGENT_TASK_QUEUE=task_queue, AGENT_MODEL="scripted-model", TERM="xterm", COLUMNS=str(COLUMNS), LINES=str(LINES),
    )
    starter = [sys.executable, str(ROOT / "starter.py")]
    async with scripted_worker(client, task_queue, steps):
        code, written = await asyncio.to_thread(run_in_terminal, [*starter, "run", "--verify", "off", "--workspace", str(workspace), "edit app"], env)
        assert code == 0, written
        assert (workspace / "app.py").read_text() == "def f():\n    return 2\n"
        assert_edit_shown_as_a_diff(written)
        workflow_id = strip_ansi(written).split("task ", 1)[1].split()[0]
        code, written = await asyncio.to_thread(run_in_terminal, [*starter, "watch", workflow_id], env)
        assert code == 0, written
        assert_edit_shown_as_a_diff(written)


async def test_run_demo_into_a_pipe_has_no_status_line_or_escape_sequences(client, workspace):
    code, out, err = await cli(client, "run", "--demo", "--workspace", str(workspace), INSTRUCTION,
                               TERM="xterm", COLUMNS=str(COLUMNS))
    assert code == 0, err
    for line in MODEL_LINES:
        assert out.count(line) == 1, out
    assert "\x1b" not in out and "· turn " not in out and not SPINNER & set(out + err)
