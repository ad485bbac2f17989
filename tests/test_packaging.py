"""A non-editable install carries every package the CLI and the worker import."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.test_layers import LEVEL, ROOT


def test_the_wheel_holds_every_layer_and_the_prompt_segments(tmp_path: Path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, cwd=tmp_path,
    )
    (wheel,) = tmp_path.glob("durable_agent-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for part in LEVEL:
        if (ROOT / f"{part}.py").is_file():
            assert f"{part}.py" in names, part
        elif part != "benchmarks":  # scripts that print numbers, run from a checkout
            assert f"{part}/__init__.py" in names, part
    segments = {p.name for p in (ROOT / "prompts" / "segments").glob("*.md")}
    assert segments and all(f"prompts/segments/{name}" in names for name in segments)
    assert not any(name.startswith("tests/") for name in names)


def test_pip_install_puts_durable_agent_on_the_path_and_it_runs_the_demo(tmp_path: Path, client):
    """In a fresh venv, ``pip install .`` (dependencies from the registry, or pip's cache),
    then the command a user types: ``--help`` lists every command, ``run --demo`` ends DONE."""
    import os

    from cli.commands import COMMANDS

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    installed = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", str(ROOT)],
                               capture_output=True, text=True, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-3000:]
    command = venv / "bin" / "durable-agent"
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "AGENT_DATA_DIR": str(tmp_path / "data"),
           "TEMPORAL_ADDRESS": client.service_client.config.target_host, "TEMPORAL_NAMESPACE": "default"}
    env.pop("VIRTUAL_ENV", None)
    helped = subprocess.run(["durable-agent", "--help"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: durable-agent")
    listed = helped.stdout.split("{", 1)[1].split("}", 1)[0].split(",")
    registered = [c.__name__.rsplit(".", 1)[-1] for c in COMMANDS]
    assert len(listed) >= len(registered) and "worker" in listed and "run" in listed
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = subprocess.run([str(command), "run", "--demo", "Take notes on what is in this directory"],
                          capture_output=True, text=True, env=env, cwd=workspace, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "DONE" in done.stdout
