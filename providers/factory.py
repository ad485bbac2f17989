"""One provider per tool-calling mode (seed 000): openai, anthropic, anthropic_xml,
openai_responses.

    make_provider("openai", settings)         OpenAIProvider on OPENAI_BASE_URL
    make_provider("openai_responses", ...)    ResponsesProvider (the Responses API) on
                                              OPENAI_BASE_URL
    make_provider("anthropic", settings)      AnthropicProvider on ANTHROPIC_BASE_URL
    make_provider("anthropic_xml", settings)  XmlToolsProvider over the wire named by
                                              settings.xml_wire (anthropic or openai)

A shared ``client`` (an httpx.AsyncClient) is used as it is and not closed by the
provider; without one each provider owns its client and ``aclose()`` closes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import httpx

from core.messages import LlmRequest, TurnResult
from core.settings import PROVIDER_MODES, ProviderSettings
from providers.anthropic import AnthropicProvider
from providers.openai import OpenAIProvider
from providers.responses import ResponsesProvider
from providers.xml_tools import XmlToolsProvider

MODES = PROVIDER_MODES  # AGENT_PROVIDER takes these (core/settings.py)


class Provider(Protocol):
    name: str

    async def complete(self, req: LlmRequest, on_text: Callable[[str], None] | None = None) -> TurnResult: ...

    async def aclose(self) -> None: ...


def make_provider(
    mode: str, settings: ProviderSettings, *, client: httpx.AsyncClient | None = None
) -> Provider:
    match mode:
        case "openai":
            return _openai(settings, client)
        case "anthropic":
            return _anthropic(settings, client)
        case "openai_responses":
            return ResponsesProvider(settings.openai_base_url, settings.openai_api_key, client=client,
                                     stream_idle_s=settings.stream_idle_s)
        case "anthropic_xml":
            wire = _openai(settings, client) if settings.xml_wire == "openai" else _anthropic(settings, client)
            return XmlToolsProvider(wire)
    raise ValueError(f"unknown provider mode {mode!r} (supported: {', '.join(MODES)})")


def _openai(settings: ProviderSettings, client: httpx.AsyncClient | None) -> OpenAIProvider:
    return OpenAIProvider(settings.openai_base_url, settings.openai_api_key, client=client,
                          stream_idle_s=settings.stream_idle_s)


def _anthropic(settings: ProviderSettings, client: httpx.AsyncClient | None) -> AnthropicProvider:
    return AnthropicProvider(
        settings.anthropic_base_url,
        settings.anthropic_api_key,
        version=settings.anthropic_version,
        client=client,
        stream_idle_s=settings.stream_idle_s,
    )
