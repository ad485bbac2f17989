"""Settings: every variable read once into its group, bad values named, secrets kept out of
``repr``, and every variable in docs/configuration.md's generated table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import docs
from core.settings import (
    PROVIDER_MODES,
    SEARCH_BACKENDS,
    SECRET_PREFIX,
    EgressSettings,
    SandboxSettings,
    SecretSettings,
    Settings,
    ShellLimits,
    TracingSettings,
    variables,
)
from providers.factory import MODES
from tools.search import BACKENDS

ROOT = Path(__file__).resolve().parents[2]


def test_unset_variables_keep_the_defaults():
    assert Settings.from_env({}) == Settings()
    assert Settings().sandbox == SandboxSettings(mode="auto", bwrap=None, readable=(), limits=ShellLimits())


def test_each_variable_lands_in_its_group():
    settings = Settings.from_env({
        "AGENT_SANDBOX": " OFF ", "AGENT_SANDBOX_READABLE": "/opt/a,, /opt/b", "AGENT_SHELL_MAX_PROCS": "20",
        "AGENT_CHECKPOINTS": "no", "AGENT_SHUTDOWN_GRACE_S": "0", "AGENT_TASK_QUEUE": "q",
        "AGENT_SKILLS_DIRS": "/s1:/s2", "OTEL_SDK_DISABLED": "TRUE", "AGENT_DATA_DIR": "/data",
    })  # fmt: skip
    assert settings.sandbox.mode == "off" and settings.sandbox.readable == (Path("/opt/a"), Path("/opt/b"))
    assert settings.sandbox.limits.procs == 20 and settings.sandbox.limits.memory_mb == 2048
    assert not settings.checkpoints.enabled and settings.worker.shutdown_grace_s == 0.0
    assert settings.temporal.task_queue == "q" and settings.temporal.embedded
    assert settings.skills.dirs == (Path("/s1"), Path("/s2")) and settings.tracing.sdk_disabled
    assert settings.paths.data_dir == Path("/data")


def test_only_true_disables_opentelemetry_as_its_specification_says():
    assert not TracingSettings.from_env({"OTEL_SDK_DISABLED": "yes"}).sdk_disabled


def test_the_deny_list_reads_both_of_its_names():
    environ = {"AGENT_DENY_HOSTS": "a.example, 10.0.0.0/8", "AGENT_BROWSER_DENY_HOSTS": "*.internal"}
    assert EgressSettings.from_env(environ).deny_hosts == ("a.example", "10.0.0.0/8", "*.internal")


@pytest.mark.parametrize(
    "name, value",
    [("AGENT_SANDBOX", "maybe"), ("AGENT_SHELL_MAX_CPU_S", "1.5"), ("AGENT_SHELL_MAX_PROCS", "0"),
     ("AGENT_SHUTDOWN_GRACE_S", "-1"), ("AGENT_BROWSER_IDLE_S", "soon"), ("AGENT_STREAM_IDLE_S", "0"),
     ("AGENT_XML_WIRE", "gemini"),
     # Accepted until issue 41: a boolean read anything but "0/false/no/off" as true, a port
     # any number, a word any word, a number "nan".
     ("AGENT_STREAM", "maybe"), ("AGENT_CHECKPOINTS", "enabled"), ("AGENT_LOCAL_TOOLS", "ye"),
     ("AGENT_SHELL_ENV_ALLOW_UNSAFE", "sure"), ("AGENT_EMBEDDED_PORT", "70000"), ("AGENT_METRICS_PORT", "65536"),
     ("AGENT_LOG_LEVEL", "loud"), ("AGENT_PROVIDER", "gemini"), ("AGENT_SEARCH_BACKEND", "google"),
     ("AGENT_SHUTDOWN_GRACE_S", "nan"), ("AGENT_BROWSER_IDLE_S", "inf"), ("AGENT_CHECKPOINT_MAX_MB", "NaN")],
)  # fmt: skip
def test_a_bad_value_is_refused_naming_its_variable(name, value):
    with pytest.raises(ValueError, match=f"^{name}="):
        Settings.from_env({name: value})


def test_booleans_words_and_ports_take_what_they_name():
    settings = Settings.from_env({"AGENT_STREAM": "Off", "AGENT_LOCAL_TOOLS": "YES", "AGENT_LOG_LEVEL": "debug",
                                  "AGENT_PROVIDER": "Anthropic_XML", "AGENT_METRICS_PORT": "65535"})
    assert not settings.task.stream and settings.worker.local_tools and settings.logging.level == "DEBUG"
    assert settings.task.provider == "anthropic_xml" and settings.worker.metrics_port == 65535


def test_the_words_the_settings_take_are_the_providers_and_backends_there_are():
    assert PROVIDER_MODES == MODES and SEARCH_BACKENDS == tuple(BACKENDS)


def test_secrets_and_keys_are_read_but_never_shown():
    environ = {f"{SECRET_PREFIX}GH": "ghp-secret-1", SECRET_PREFIX: "nameless", "OPENAI_API_KEY": "sk-secret-2",
               "AGENT_CODEC_KEYS": "k:secret-3", "TAVILY_API_KEY": "tvly-secret-4",
               "AGENT_CONTEXT_DB": "postgresql://a:secret-5@db/x", "AGENT_SECRETS_FILE": "/run/secrets"}
    settings = Settings.from_env(environ)
    assert dict(settings.secrets.values) == {"GH": "ghp-secret-1"}
    assert settings.secrets == SecretSettings(file=Path("/run/secrets"), values={"GH": "ghp-secret-1"})
    assert "secret-" not in repr(settings)


def test_the_shell_inherits_only_the_base_variables_and_those_allowed():
    environ = {"PATH": "/bin", "LC_ALL": "C", "OPENAI_API_KEY": "sk", "GIT_AUTHOR_NAME": "a", "HOME": "/h",
               "AGENT_SHELL_ENV_ALLOW": "GIT_AUTHOR_NAME"}
    assert dict(Settings.from_env(environ).shell.inherited) == {"PATH": "/bin", "LC_ALL": "C", "HOME": "/h",
                                                                "GIT_AUTHOR_NAME": "a"}


def test_each_variable_is_read_by_one_setting():
    names = list(variables())
    assert len(names) == len(set(names)) and "AGENT_DENY_HOSTS" in names and SECRET_PREFIX in names


def _named_in(text: str, name: str) -> bool:
    if name.endswith("_"):  # a prefix, written AGENT_SECRET_<NAME>
        return f"{name}<NAME>" in text
    return re.search(rf"(?<![A-Z0-9_]){re.escape(name)}(?![A-Z0-9_])", text) is not None


def test_the_configuration_page_lists_every_variable_the_settings_read():
    written = docs.written(docs.named("variables"), ROOT)
    assert written is not None, "docs/configuration.md has no generated table of variables"
    assert written == docs.env_table(), f"docs/configuration.md's table of variables is stale: run {docs.REGENERATE}"
    missing = [name for name in variables() if not _named_in(written, name)]
    assert not missing, f"docs/configuration.md does not name these variables: {', '.join(missing)}"


def test_the_table_shows_each_default_the_code_has():
    table = docs.env_table()
    assert "| `AGENT_SHELL_MAX_PROCS` | processes and threads of one command | `256` |" in table
    assert "| `AGENT_NETWORK_ALLOW` |" in table and "| `public` |" in table
    assert f"| `{SECRET_PREFIX}<NAME>` |" in table


def test_a_variable_with_no_description_stops_the_table(monkeypatch):
    monkeypatch.delitem(docs.VARIABLES, "AGENT_SANDBOX")
    with pytest.raises(KeyError, match="AGENT_SANDBOX has no line"):
        docs.env_table()


def test_a_default_in_words_is_refused_where_the_code_has_one(monkeypatch):
    monkeypatch.setitem(docs.VARIABLES, "AGENT_SANDBOX", ("the sandbox", "whatever"))
    with pytest.raises(ValueError, match="AGENT_SANDBOX: give its default in words"):
        docs.env_table()


def test_an_embeddings_endpoint_needs_its_model():
    settings = Settings.from_env({"AGENT_EMBEDDINGS_URL": "http://127.0.0.1:11434/v1",
                                  "AGENT_EMBEDDINGS_MODEL": "nomic-embed-text", "AGENT_EMBEDDINGS_API_KEY": "sk-e-secret"})
    assert settings.memory.embeddings_model == "nomic-embed-text" and "sk-e-secret" not in repr(settings)
    with pytest.raises(ValueError, match="^AGENT_EMBEDDINGS_URL is set: AGENT_EMBEDDINGS_MODEL"):
        Settings.from_env({"AGENT_EMBEDDINGS_URL": "http://127.0.0.1:11434/v1"})
