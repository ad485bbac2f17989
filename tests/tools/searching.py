"""Search as a worker started with some search variables has it, for the search tests:
``use(...)`` names the variables (no others set), and ``searching(ctx)`` is a tool context
on that worker. ``forget()`` between tests: without ``use`` there is no backend."""

from __future__ import annotations

from dataclasses import replace

from core.settings import SearchSettings
from tools.base import ToolContext

_chosen: list[SearchSettings] = []


def use(**env: str) -> None:
    _chosen[:] = [SearchSettings.from_env(env)]


def settings() -> SearchSettings:
    return _chosen[-1] if _chosen else SearchSettings()


def searching(ctx: ToolContext) -> ToolContext:
    return replace(ctx, settings=replace(ctx.settings, search=settings()))


def forget() -> None:
    _chosen.clear()
