from pathlib import Path

import pytest

from tools.base import ToolContext
from tools.shell import ShellArgs, env_allow_list, run_shell, scrubbed_env

CREDENTIALS = {
    "AGENT_SECRET_X": "agent-secret",
    "AGENT_SECRETS_FILE": "/home/me/.secrets",
    "AGENT_CODEC_KEYS": "k1:abc",
    "AGENT_CODEC_TOKEN": "codec-token",
    "OPENAI_API_KEY": "sk-openai",
    "OPENAI_BASE_URL": "https://proxy.internal",
    "ANTHROPIC_API_KEY": "sk-ant",
    "TEMPORAL_API_KEY": "temporal-key",
    "TEMPORAL_ADDRESS": "cloud:7233",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "AWS_PROFILE": "prod",
    "GITHUB_TOKEN": "ghp_x",
    "HF_TOKEN": "hf_x",
    "TAVILY_API_KEY": "tvly",
    "DJANGO_SECRET_KEY": "dj",
    "CLIENT_SECRET": "cs",
    "PGPASSWORD": "pg",
    "db_password": "lower",
    "GOOGLE_APPLICATION_CREDENTIALS": "/creds.json",
}
ORDINARY = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/me",
    "LANG": "C.UTF-8",
    "TERM": "xterm",
    "VIRTUAL_ENV": "/venv",
    "TOKENIZERS_PARALLELISM": "false",
    "SSH_AUTH_SOCK": "/tmp/agent.sock",
}


def test_scrubbed_env_drops_credential_like_variables_and_keeps_the_rest():
    assert scrubbed_env({**CREDENTIALS, **ORDINARY}) == ORDINARY


def test_scrubbed_env_keeps_variables_on_the_allow_list():
    env = scrubbed_env({**CREDENTIALS, **ORDINARY}, allow=["GITHUB_TOKEN", "AWS_PROFILE", "NOT_SET"])
    assert env == {**ORDINARY, "GITHUB_TOKEN": "ghp_x", "AWS_PROFILE": "prod"}


def test_env_allow_list_reads_comma_separated_names():
    assert env_allow_list({"AGENT_SHELL_ENV_ALLOW": " GITHUB_TOKEN, ,AWS_PROFILE "}) == [
        "GITHUB_TOKEN",
        "AWS_PROFILE",
    ]
    assert env_allow_list({}) == []


async def _env_seen_by_command(ws: Path) -> dict[str, str]:
    result = await run_shell(ShellArgs(command="env -0"), ToolContext(workspace=ws))
    assert result.exit_code == 0
    body = result.content.rsplit("\n[exit code:", 1)[0]
    return dict(item.split("=", 1) for item in body.split("\0") if "=" in item)


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    monkeypatch.delenv("AGENT_SHELL_ENV_ALLOW", raising=False)


async def test_shell_command_does_not_see_secrets_in_its_environment(tmp_path, credentials):
    env = await _env_seen_by_command(tmp_path)
    assert not set(CREDENTIALS) & set(env)
    for value in CREDENTIALS.values():
        assert value not in "\n".join(env.values())
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"


async def test_shell_command_sees_variables_listed_in_agent_shell_env_allow(tmp_path, credentials, monkeypatch):
    monkeypatch.setenv("AGENT_SHELL_ENV_ALLOW", "GITHUB_TOKEN")
    env = await _env_seen_by_command(tmp_path)
    assert env["GITHUB_TOKEN"] == "ghp_x"
    assert "OPENAI_API_KEY" not in env and "AGENT_SECRET_X" not in env
