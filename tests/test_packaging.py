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
