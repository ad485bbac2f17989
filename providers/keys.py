"""Whether the chosen provider has its key: checked before the first model call, so a missing
key is one line naming the variable at ``run``/``start`` and at worker start, not a 401 the
task fails on (or retries) minutes later.

A key is needed only where the provider's own service is: a local or other OpenAI-compatible
server (llama.cpp, vLLM, a gateway) at ``OPENAI_BASE_URL`` may take none.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from core.settings import ProviderSettings

OPENAI_HOST, ANTHROPIC_HOST = "api.openai.com", "api.anthropic.com"


def missing_key(mode: str, settings: ProviderSettings) -> str | None:
    """One line naming the unset variable the provider ``mode`` needs; None when set or not needed."""
    wire = settings.xml_wire if mode == "anthropic_xml" else mode
    if wire in ("openai", "openai_responses"):
        key, name, url, host = settings.openai_api_key, "OPENAI_API_KEY", settings.openai_base_url, OPENAI_HOST
    elif wire == "anthropic":
        key, name, url, host = settings.anthropic_api_key, "ANTHROPIC_API_KEY", settings.anthropic_base_url, ANTHROPIC_HOST
    else:
        return None
    if key or urlsplit(url).hostname != host:
        return None
    return f"{name} is not set: provider {mode} calls {url}, which needs it (export {name}=…)"
