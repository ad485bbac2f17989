"""The version ``--version`` prints: the installed package's (its metadata), or in a source
checkout run without installing, the one ``pyproject.toml`` names."""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

PACKAGE = "durable-agent"
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def package_version() -> str:
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        pass
    try:
        return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"
