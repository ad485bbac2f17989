from pathlib import Path

import pytest

from core.settings import ShellSettings, allowed_env
from tests import configured, sandboxing
from tools.shell import ShellArgs, run_shell

CREDENTIALS = {
    "AGENT_SECRET_X": "agent-secret",
    "AGENT_SECRETS_FILE": "/home/me/.secrets",
    "AGENT_CODEC_KEYS": "k1:abc",
    "AGENT_CODEC_TOKEN": "codec-token",
    "AGENT_CONTEXT_DB": "postgresql://agent:pw-in-url@db.internal/context",
    "OPENAI_API_KEY": "sk-openai",
    "OPENAI_BASE_URL": "https://proxy.internal",
    "ANTHROPIC_API_KEY": "sk-ant",
    "TEMPORAL_API_KEY": "temporal-key",
    "TEMPORAL_ADDRESS": "cloud:7233",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "AWS_PROFILE": "prod",
    "GITHUB_TOKEN": "ghp_x",
    "GH_PAT": "github_pat_x",
    "HF_TOKEN": "hf_x",
    "TAVILY_API_KEY": "tvly",
    "DJANGO_SECRET_KEY": "dj",
    "CLIENT_SECRET": "cs",
    "PGPASSWORD": "pg",
    "db_password": "lower",
    "DATABASE_URL": "postgresql://app:hunter2@db.internal/app",
    "MY_PASSPHRASE": "correct horse",
    "GOOGLE_APPLICATION_CREDENTIALS": "/creds.json",
}
# Not secret, but the worker's: a command does not get them either unless they are allowed.
WORKERS_OWN = {
    "VIRTUAL_ENV": "/venv",
    "TOKENIZERS_PARALLELISM": "false",
    "SSH_AUTH_SOCK": "/tmp/agent.sock",
}
BASE = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/me",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm",
    "TZ": "UTC",
}
# What bash itself, the sandbox and the shell tool add to a command's environment (the tool:
# no Python bytecode, tools/shell.py's command_env).
ADDED = {"PWD", "SHLVL", "_", "OLDPWD", "TMPDIR", "XDG_CACHE_HOME", "PYTHONDONTWRITEBYTECODE"}


def test_allowed_env_keeps_only_the_base_names():
    assert allowed_env({**CREDENTIALS, **WORKERS_OWN, **BASE}) == BASE


def test_allowed_env_adds_the_names_on_the_allow_list():
    env = allowed_env({**CREDENTIALS, **WORKERS_OWN, **BASE}, allow=["GITHUB_TOKEN", "VIRTUAL_ENV", "NOT_SET"])
    assert env == {**BASE, "GITHUB_TOKEN": "ghp_x", "VIRTUAL_ENV": "/venv"}


def test_env_allow_list_reads_comma_separated_names():
    assert ShellSettings.from_env({"AGENT_SHELL_ENV_ALLOW": " GIT_AUTHOR_NAME, ,AWS_PROFILE "}).env_allow == (
        "GIT_AUTHOR_NAME",
        "AWS_PROFILE",
    )
    assert ShellSettings.from_env({}).env_allow == ()


UNSAFE = ["GITHUB_TOKEN", "OPENAI_API_KEY", "django_secret_key", "Client_Secret", "DB_PASSWORD",
          "GOOGLE_APPLICATION_CREDENTIALS", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV",
          "PYTHONSTARTUP", "PYTHONPATH", "PERL5OPT", "NODE_OPTIONS", "PROMPT_COMMAND"]


@pytest.mark.parametrize("name", UNSAFE)
def test_an_unsafe_name_on_the_env_allow_list_is_refused_naming_it_and_the_override(name):
    with pytest.raises(ValueError) as refused:
        ShellSettings.from_env({"AGENT_SHELL_ENV_ALLOW": f"GIT_AUTHOR_NAME,{name}"})
    message = str(refused.value)
    assert f"names {name}," in message and "AGENT_SHELL_ENV_ALLOW_UNSAFE=1" in message and "\n" not in message


@pytest.mark.parametrize("name", UNSAFE)
def test_an_unsafe_name_is_allowed_when_the_operator_insists(name):
    environ = {"AGENT_SHELL_ENV_ALLOW": name, "AGENT_SHELL_ENV_ALLOW_UNSAFE": "1", name: "value"}
    assert ShellSettings.from_env(environ).inherited == {name: "value"}


def test_names_that_only_contain_a_secret_word_are_not_refused():
    allow = "GIT_AUTHOR_NAME,KEYBOARD_LAYOUT,TOKENIZERS_PARALLELISM,ENVIRONMENT"
    assert ShellSettings.from_env({"AGENT_SHELL_ENV_ALLOW": allow}).env_allow == tuple(allow.split(","))


def test_an_unsafe_env_allow_list_stops_the_cli_at_start_in_one_line(capsys, monkeypatch):
    from starter import main

    monkeypatch.setenv("AGENT_SHELL_ENV_ALLOW", "LD_PRELOAD")
    assert main(["list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: AGENT_SHELL_ENV_ALLOW names LD_PRELOAD")


def test_a_command_inherits_what_the_settings_took_from_the_worker_when_they_were_read():
    environ = {**CREDENTIALS, **WORKERS_OWN, **BASE, "AGENT_SHELL_ENV_ALLOW": "VIRTUAL_ENV"}
    assert ShellSettings.from_env(environ).inherited == {**BASE, "VIRTUAL_ENV": "/venv"}


async def _env_seen_by_command(ws: Path) -> dict[str, str]:
    result = await run_shell(ShellArgs(command="env -0", timeout_s=30), configured.tool_context(workspace=ws))
    assert result.exit_code == 0
    body = result.content.rsplit("\n[exit code:", 1)[0]
    return dict(item.split("=", 1) for item in body.split("\0") if "=" in item)


@pytest.fixture(params=["sandboxed", "unsandboxed"])
def credentials(request, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "sandboxed":
        sandboxing.require(monkeypatch)
    else:
        sandboxing.unsandboxed(monkeypatch)
    for name, value in {**CREDENTIALS, **WORKERS_OWN}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    monkeypatch.delenv("AGENT_SHELL_ENV_ALLOW", raising=False)
    configured.use(monkeypatch)  # a worker started in this environment
    return request.param


async def test_shell_command_sees_only_the_base_environment(tmp_path, credentials):
    env = await _env_seen_by_command(tmp_path)
    assert not set(env) - set(BASE) - ADDED - {n for n in env if n.startswith("LC_")}
    for value in CREDENTIALS.values():
        assert value not in "\n".join(env.values())
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin" and env["PYTHONDONTWRITEBYTECODE"] == "1"
    if credentials == "sandboxed":
        assert env["HOME"] == "/tmp"  # the real one is hidden


async def test_shell_command_sees_variables_listed_in_agent_shell_env_allow(tmp_path, credentials, monkeypatch):
    configured.use(monkeypatch, AGENT_SHELL_ENV_ALLOW="GITHUB_TOKEN,VIRTUAL_ENV", AGENT_SHELL_ENV_ALLOW_UNSAFE="1")
    env = await _env_seen_by_command(tmp_path)
    assert env["GITHUB_TOKEN"] == "ghp_x" and env["VIRTUAL_ENV"] == "/venv"
    assert "OPENAI_API_KEY" not in env and "AGENT_SECRET_X" not in env and "DATABASE_URL" not in env
