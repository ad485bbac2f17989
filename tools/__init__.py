"""The agent's tools: one per module, gathered in ``tools.registry``."""

from tools.registry import (
    DEFAULT_TOOLS,
    REGISTRY,
    coerce_args,
    compact_line,
    danger_of,
    execute,
    specs,
)

__all__ = [
    "DEFAULT_TOOLS",
    "REGISTRY",
    "coerce_args",
    "compact_line",
    "danger_of",
    "execute",
    "specs",
]
