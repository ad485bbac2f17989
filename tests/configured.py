"""Settings in tests, built as an entry point builds them: from this test's environment
(conftest gives each test its own data directory) plus what the test sets. ``settings``
for what a service is handed, ``tool_context`` for a tool call as the tool activity makes
it, ``cli_args`` for a command's arguments as starter.py hands them over, ``secrets`` for
the SecretStore a worker would build."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from activities.llm import LlmActivities
from core.settings import ProviderSettings, Settings
from runtime.secrets import SecretStore
from runtime.settings import load_settings
from runtime.sqlite_store import default_store_path
from runtime.store import ContextStore, Store
from tools.base import ToolContext


def settings(**env: str) -> Settings:
    """What an entry point started now, in this environment plus ``env``, would read."""
    return load_settings({**os.environ, **env})


def secrets(config: Settings | None = None) -> SecretStore:
    """The secrets a worker with ``config`` (default: ``settings()``) would redact."""
    return SecretStore.from_settings((config or settings()).secrets)


def tool_context(workspace: Path, config: Settings | None = None, **fields: Any) -> ToolContext:
    """A tool call's context on a worker with ``config`` (default: ``settings()``)."""
    return ToolContext(workspace=workspace, settings=config or settings(), **fields)


def store_path() -> Path:
    """The SQLite file a worker with ``settings()`` keeps its context store in."""
    config = settings()
    return default_store_path(config.store, config.paths)


def llm_activities(providers: ProviderSettings, store: Store | ContextStore, **options) -> LlmActivities:
    """The LLM activity as a worker with ``settings()`` builds it (``options``: its keywords)."""
    config = settings()
    return LlmActivities(providers, store, secrets(config), tables=config.models, **options)


def use(monkeypatch: Any, **env: str) -> Settings:
    """``env`` set for this test: the settings it builds from now on (tool contexts, workers)
    read it; those settings."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return settings()


def cli_args(argv: list[str], **env: str) -> argparse.Namespace:
    """``argv`` parsed by the CLI, with the settings starter.py would add."""
    from starter import parser

    args = parser().parse_args(argv)
    args.settings = settings(**env)
    return args
