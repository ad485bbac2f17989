"""Endpoints and keys for every provider, read by the worker from its environment.

Keys never enter the workflow history: the workflow names a provider mode, the
worker holds the settings. Keys are left out of ``repr`` so a logged settings
object does not leak them.

    OPENAI_BASE_URL      default https://api.openai.com/v1
    OPENAI_API_KEY
    ANTHROPIC_BASE_URL   default https://api.anthropic.com (the adapter adds /v1/messages)
    ANTHROPIC_API_KEY
    ANTHROPIC_VERSION    default 2023-06-01 (the anthropic-version header)
    AGENT_XML_WIRE       the wire under the anthropic_xml mode: anthropic (default) or openai
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, cast

XmlWire = Literal["anthropic", "openai"]
XML_WIRES: tuple[XmlWire, ...] = ("anthropic", "openai")


@dataclass
class ProviderSettings:
    openai_base_url: str = "https://api.openai.com/v1"
    openai_api_key: str | None = field(default=None, repr=False)
    anthropic_base_url: str = "https://api.anthropic.com"
    anthropic_api_key: str | None = field(default=None, repr=False)
    anthropic_version: str = "2023-06-01"
    xml_wire: XmlWire = "anthropic"
    # A stream that has started and then sends nothing for this long ends the attempt (retryable).
    stream_idle_s: float = 60.0

    def __post_init__(self) -> None:
        if self.xml_wire not in XML_WIRES:
            raise ValueError(f"xml_wire must be one of {', '.join(XML_WIRES)}, got {self.xml_wire!r}")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ProviderSettings:
        """Settings from ``env`` (the entry points' environment); unset or empty variables keep the defaults."""
        defaults = cls()
        return cls(
            openai_base_url=env.get("OPENAI_BASE_URL") or defaults.openai_base_url,
            openai_api_key=env.get("OPENAI_API_KEY") or None,
            anthropic_base_url=env.get("ANTHROPIC_BASE_URL") or defaults.anthropic_base_url,
            anthropic_api_key=env.get("ANTHROPIC_API_KEY") or None,
            anthropic_version=env.get("ANTHROPIC_VERSION") or defaults.anthropic_version,
            xml_wire=cast(XmlWire, (env.get("AGENT_XML_WIRE") or defaults.xml_wire).lower()),
            stream_idle_s=_seconds(env, "AGENT_STREAM_IDLE_S", defaults.stream_idle_s),
        )


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a number of seconds") from None
    if value <= 0:
        raise ValueError(f"{name}={raw!r}: expected a positive number of seconds")
    return value
