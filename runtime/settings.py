"""This process's settings: where the entry points read the environment, once.

``Settings`` and its groups are in ``core/settings.py`` (the bottom floor, so tools and
providers can take theirs). ``load_settings`` reads them from ``os.environ``; worker.py,
starter.py, ``evals`` and the codec server call it once and hand each service its group,
the object built from it (``SecretStore``, the store) or the whole ``Settings``. Nothing
else reads the environment, and nothing falls back to it (docs/settings.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from core.settings import Settings


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """This process's settings (ValueError naming a bad variable); ``environ``: another's."""
    return Settings.from_env(os.environ if environ is None else environ)


def child_environment(**overrides: str) -> dict[str, str]:
    """This process's environment with ``overrides``: for a process it starts that reads its
    settings as this one did, but for what the parent already decided (its data directory)."""
    return {**os.environ, **overrides}


__all__ = ["Settings", "child_environment", "load_settings"]
