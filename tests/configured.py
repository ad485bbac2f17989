"""Tool settings in tests. The tool modules keep this process's settings, handed to them by
worker.py (``configure_tools``); the session configures them from its environment as a
worker would, each test gets them back as they were (``keep``, autouse in conftest), and a
test that needs others asks for them with ``use``."""

from __future__ import annotations

import os

import pytest

from core.settings import Settings
from tools import egress, memory_index, sandbox, search, shell, skills
from tools.browser import pool
from worker import configure_tools

STATE = [(sandbox, "_SETTINGS"), (sandbox, "_STATUS"), (shell, "_SETTINGS"), (egress, "_DENY"),
         (search, "_SETTINGS"), (skills, "_SETTINGS"), (pool, "_SETTINGS"), (memory_index, "_CONFIG")]


def keep(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the tool modules hold now comes back after the test."""
    for module, name in STATE:
        monkeypatch.setattr(module, name, getattr(module, name))


def use(monkeypatch: pytest.MonkeyPatch, **env: str) -> Settings:
    """The tools configured as a worker started in this environment plus ``env`` would
    configure them, for this test."""
    keep(monkeypatch)
    settings = Settings.from_env({**os.environ, **env})
    configure_tools(settings)
    return settings
