"""This process's settings: where the worker and the CLI read the environment, once.

``Settings`` and its groups are in ``core/settings.py`` (the bottom floor, so tools and
providers can take theirs). ``from_process(Group)`` reads one group from ``os.environ``: the
entry points use ``from_process(Settings)``; a runtime or temporal function whose callers
do not yet pass their group (the CLI, activities/, evals/: issue 29's second pass) falls
back to it when given None. ``grep -rn from_process`` lists those fallbacks.
"""

from __future__ import annotations

import os
from typing import TypeVar

from core.settings import Group, Settings

G = TypeVar("G", bound=Group)


def from_process(group: type[G]) -> G:
    """``group`` as this process's environment sets it (ValueError naming a bad variable)."""
    return group.from_env(os.environ)


__all__ = ["Settings", "from_process"]
