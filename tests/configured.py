"""Settings in tests, built as an entry point builds them: from this test's environment
(conftest gives each test its own data directory) plus what the test sets. ``settings``
for what a service is handed, ``cli_args`` for a command's arguments as starter.py hands
them over, ``secrets`` for the SecretStore a worker would build.

The tool modules keep this process's settings, handed to them by worker.py
(``configure_tools``); the session configures them from its environment as a worker would,
each test gets them back as they were (``keep``, autouse in conftest), and a test that
needs others asks for them with ``use``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from activities.llm import LlmActivities, ProviderSettings
from core.settings import Settings
from runtime.secrets import SecretStore
from runtime.settings import load_settings
from runtime.sqlite_store import default_store_path
from runtime.store import ContextStore, Store
from tools import egress, sandbox, search, shell, skills
from tools.browser import pool
from worker import configure_tools

STATE = [(sandbox, "_SETTINGS"), (sandbox, "_STATUS"), (shell, "_SETTINGS"), (egress, "_DENY"),
         (search, "_SETTINGS"), (skills, "_SETTINGS"), (pool, "_SETTINGS")]


def settings(**env: str) -> Settings:
    """What an entry point started now, in this environment plus ``env``, would read."""
    return load_settings({**os.environ, **env})


def secrets(config: Settings | None = None) -> SecretStore:
    """The secrets a worker with ``config`` (default: ``settings()``) would redact."""
    return SecretStore.from_settings((config or settings()).secrets)


def store_path() -> Path:
    """The SQLite file a worker with ``settings()`` keeps its context store in."""
    config = settings()
    return default_store_path(config.store, config.paths)


def llm_activities(providers: ProviderSettings, store: Store | ContextStore, **options) -> LlmActivities:
    """The LLM activity as a worker with ``settings()`` builds it (``options``: its keywords)."""
    config = settings()
    return LlmActivities(providers, store, secrets(config), tables=config.models, **options)


def cli_args(argv: list[str], **env: str) -> argparse.Namespace:
    """``argv`` parsed by the CLI, with the settings starter.py would add."""
    from starter import parser

    args = parser().parse_args(argv)
    args.settings = settings(**env)
    return args


def keep(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the tool modules hold now comes back after the test."""
    for module, name in STATE:
        monkeypatch.setattr(module, name, getattr(module, name))


def use(monkeypatch: pytest.MonkeyPatch, **env: str) -> Settings:
    """The tools configured as a worker started in this environment plus ``env`` would
    configure them, for this test."""
    keep(monkeypatch)
    config = settings(**env)
    configure_tools(config)
    return config
