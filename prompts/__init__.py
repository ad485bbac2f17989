"""The prompt layer: the system prompt as XML segments, each rules plus examples.

Every word the model reads as system prompt is in ``prompts/segments/*.md``,
in ``core.untrusted.SECURITY_PROMPT_SEGMENT``, or in the ``PromptContext``
and environment values filled into the segments. The code only picks and
orders segments; the text holds no conditions of its own.

    stable      identity, language, agent_loop, tool_use, error_handling,
                output_format, security                  the same for every task
    dynamic     environment (workspace, date, tools)      always
                user_preferences, memory,                 when the context has them
                project_conventions (AGENTS.md)
                skills (the catalogue)                    when there are skills and
                                                          `load_skill` is a tool

``build_system_prompt`` returns the two parts as a typed ``SystemPrompt``. The
stable part is byte-identical for every workspace, date and tool list, so a
provider with prompt caching caches it. Values filled in are made inert: a
look-alike of one of the prompt's own tags has its ``<`` escaped, so a MEMORY.md
cannot close its segment and speak outside it.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from core.messages import SystemPrompt
from prompts.context import PromptContext, load_prompt_context

STABLE_SEGMENTS = (
    "identity",
    "language",
    "agent_loop",
    "tool_use",
    "error_handling",
    "output_format",
    "security",
)
DYNAMIC_SEGMENTS = ("environment", "user_preferences", "memory", "project_conventions", "skills")
SKILLS_TOOL = "load_skill"

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_OWN_TAGS = (*STABLE_SEGMENTS, *DYNAMIC_SEGMENTS, "file", "preferences", "available_skills")
_TAG_LOOKALIKE = re.compile(r"<(\s*/?\s*(?:" + "|".join(_OWN_TAGS) + r")\b)", re.IGNORECASE)


def segment_text(name: str) -> str:
    """The text of one segment as written, placeholders included."""
    if name == "security":
        from core.untrusted import SECURITY_PROMPT_SEGMENT

        return SECURITY_PROMPT_SEGMENT.strip()
    path = resources.files("prompts").joinpath("segments", f"{name}.md")
    return path.read_text(encoding="utf-8").strip()


def render_segment(name: str, **values: str) -> str:
    """A segment with its ``{placeholders}`` filled in one pass; a missing value raises KeyError."""

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise KeyError(f"segment {name!r} needs a value for {{{key}}}")
        return _TAG_LOOKALIKE.sub(r"&lt;\1", values[key])

    return _PLACEHOLDER.sub(fill, segment_text(name))


@functools.cache
def stable_prompt() -> str:
    """The text of the stable part: the same for every task."""
    return "\n\n".join(segment_text(name) for name in STABLE_SEGMENTS)


COMPACT_SEGMENT = "compact"


def build_system_prompt(
    *, workspace: str, date: str, tool_names: list[str], context: PromptContext | None = None,
    compact: bool = False,
) -> SystemPrompt:
    """The whole system prompt: the stable part and the dynamic part.

    ``context=None`` gives the minimal prompt (no preferences, memory, project
    conventions or skills), e.g. for a sub-agent. ``compact`` gives the smallest prompt
    that still runs the loop (one short segment and the environment), for models whose
    window is a few thousand tokens: the project's memory and conventions are left out.
    """
    if compact:
        environment = render_segment("environment", workspace=workspace, date=date, tools=", ".join(tool_names))
        return SystemPrompt(stable=f"{segment_text(COMPACT_SEGMENT)}\n", dynamic=f"\n{environment}\n")
    ctx = context or PromptContext()
    tools = ", ".join(tool_names) or "none"
    dynamic = [render_segment("environment", workspace=workspace, date=date, tools=tools)]
    if ctx.preferences.strip():
        dynamic.append(render_segment("user_preferences", preferences=ctx.preferences.strip()))
    if ctx.memory.strip():
        dynamic.append(render_segment("memory", memory=ctx.memory.strip()))
    if ctx.agents.strip():
        dynamic.append(render_segment("project_conventions", agents=ctx.agents.strip()))
    if ctx.skills and SKILLS_TOOL in tool_names:
        catalogue = "\n".join(f"- {s.name}: {s.description}" for s in ctx.skills)
        dynamic.append(render_segment("skills", skills=catalogue))
    return SystemPrompt(stable=f"{stable_prompt()}\n", dynamic="\n" + "\n\n".join(dynamic) + "\n")


__all__ = [
    "DYNAMIC_SEGMENTS",
    "STABLE_SEGMENTS",
    "PromptContext",
    "build_system_prompt",
    "load_prompt_context",
    "render_segment",
    "segment_text",
    "stable_prompt",
]
