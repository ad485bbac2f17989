"""make_provider for each mode, and the settings it reads."""

from __future__ import annotations

import httpx
import pytest

from core.messages import ChatMessage, LlmRequest
from core.settings import ProviderSettings
from fakes.scripted import ScriptedModelServer, text
from providers.anthropic import AnthropicProvider
from providers.factory import MODES, Provider, make_provider
from providers.openai import OpenAIProvider
from providers.responses import ResponsesProvider
from providers.xml_tools import XmlToolsProvider

ENV = {
    "OPENAI_BASE_URL": "http://oa.test/v1",
    "OPENAI_API_KEY": "sk-openai-secret",
    "ANTHROPIC_BASE_URL": "http://an.test",
    "ANTHROPIC_API_KEY": "sk-ant-secret",
    "ANTHROPIC_VERSION": "2026-10-21",
    "AGENT_XML_WIRE": "openai",
}


def test_settings_from_env_read_every_variable():
    settings = ProviderSettings.from_env(ENV)
    assert settings == ProviderSettings(
        openai_base_url="http://oa.test/v1",
        openai_api_key="sk-openai-secret",
        anthropic_base_url="http://an.test",
        anthropic_api_key="sk-ant-secret",
        anthropic_version="2026-10-21",
        xml_wire="openai",
    )


def test_settings_from_an_empty_env_are_the_defaults():
    assert ProviderSettings.from_env({}) == ProviderSettings()
    assert ProviderSettings() == ProviderSettings(
        "https://api.openai.com/v1", None, "https://api.anthropic.com", None, "2023-06-01", "anthropic"
    )


def test_settings_repr_hides_the_keys():
    shown = repr(ProviderSettings.from_env(ENV))
    assert "sk-openai-secret" not in shown and "sk-ant-secret" not in shown
    assert "http://an.test" in shown


def test_settings_reject_an_unknown_xml_wire():
    with pytest.raises(ValueError, match="AGENT_XML_WIRE='gemini'"):
        ProviderSettings.from_env({"AGENT_XML_WIRE": "gemini"})


@pytest.mark.parametrize(
    ("mode", "wire", "kind", "inner"),
    [
        ("openai", "anthropic", OpenAIProvider, None),
        ("anthropic", "anthropic", AnthropicProvider, None),
        ("anthropic_xml", "anthropic", XmlToolsProvider, AnthropicProvider),
        ("anthropic_xml", "openai", XmlToolsProvider, OpenAIProvider),
        ("openai_responses", "anthropic", ResponsesProvider, None),
    ],
)
def test_make_provider_builds_the_provider_for_each_mode(mode: str, wire: str, kind: type, inner: type | None):
    provider = make_provider(mode, ProviderSettings(xml_wire=wire))  # type: ignore[arg-type]
    assert isinstance(provider, kind) and provider.name == mode
    if inner is not None:
        assert isinstance(provider, XmlToolsProvider) and isinstance(provider.inner, inner)
    assert set(MODES) == {"openai", "anthropic", "anthropic_xml", "openai_responses"}


def test_make_provider_rejects_an_unknown_mode_naming_the_supported_ones():
    with pytest.raises(ValueError, match="'gemini'.*openai, anthropic, anthropic_xml, openai_responses"):
        make_provider("gemini", ProviderSettings())


async def test_made_providers_reach_their_endpoints_with_the_configured_keys():
    call = '<function_calls><invoke name="shell"><parameter name="command">ls</parameter></invoke></function_calls>'
    with ScriptedModelServer([text("a"), text("b"), text(call), text("d")]) as server:
        settings = ProviderSettings(
            openai_base_url=server.url,
            openai_api_key="sk-o",
            anthropic_base_url=server.anthropic_url,
            anthropic_api_key="sk-a",
            anthropic_version="2026-10-21",
        )
        request = LlmRequest(model="m", system="s", messages=[ChatMessage(role="user", content="hi")])
        results = []
        async with httpx.AsyncClient() as client:
            for mode in MODES:
                provider: Provider = make_provider(mode, settings, client=client)
                results.append(await provider.complete(request))
                await provider.aclose()
            assert not client.is_closed  # a shared client is the caller's to close
        server.assert_consumed()
    assert [(r.content, r.source) for r in results] == [("a", "native"), ("b", "native"), ("", "xml"), ("d", "native")]
    assert [(c.name, c.arguments) for c in results[2].tool_calls] == [("shell", {"command": "ls"})]
    assert server.request_headers[0]["authorization"] == "Bearer sk-o"
    assert server.request_headers[1]["x-api-key"] == "sk-a"
    assert server.request_headers[1]["anthropic-version"] == "2026-10-21"
    assert server.request_headers[2]["x-api-key"] == "sk-a"
    assert server.request_headers[3]["authorization"] == "Bearer sk-o"
