"""The prompt layer: the system prompt as XML segments, rules plus examples.

The stable part comes first and the dynamic part (workspace, date, tools)
after ``CACHE_BOUNDARY``, so a provider with prompt caching can cache the
prefix.
"""

from __future__ import annotations

from importlib import resources

# A zero-width marker between the stable prefix and the dynamic suffix.
CACHE_BOUNDARY = "\u200b<!-- cache-boundary -->\u200b"


def system_template() -> str:
    return resources.files(__package__).joinpath("system.md").read_text(encoding="utf-8")


def build_system_prompt(*, workspace: str, date: str, tool_names: list[str]) -> str:
    from tools.untrusted import SECURITY_PROMPT_SEGMENT

    text = system_template()
    return (
        text.replace("{security}", SECURITY_PROMPT_SEGMENT.strip())
        .replace("{cache_boundary}", CACHE_BOUNDARY)
        .replace("{workspace}", workspace)
        .replace("{date}", date)
        .replace("{tools}", ", ".join(tool_names))
    )


def split_at_cache_boundary(system: str) -> tuple[str, str]:
    """The stable prefix and the dynamic suffix of a system prompt."""
    stable, _, dynamic = system.partition(CACHE_BOUNDARY)
    return stable, dynamic
