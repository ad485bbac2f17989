"""The agent's tools: one per module, gathered in ``tools.registry``."""

from tools.registry import (
    COMPACT_KEYS,
    REGISTRY,
    classify_call,
    coerce_args,
    compact_line,
    declare,
    execute,
    runs_in,
    specs,
)

__all__ = [
    "COMPACT_KEYS",
    "REGISTRY",
    "classify_call",
    "coerce_args",
    "compact_line",
    "declare",
    "execute",
    "runs_in",
    "specs",
]
