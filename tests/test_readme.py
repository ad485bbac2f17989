"""Every command and example on the README works as written: the set-up command's task runs end to
end on the embedded defaults, the test command is the one CI runs, every other command is parsed by
the CLI's own parser (its subcommand and options), every variable it sets is one the settings
read, the chat example is a channels file the gateway loads, and every relative link of the README
and of docs/ leads to a file and a heading. A command this module does not know fails it."""

from __future__ import annotations

import asyncio
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import starter
import worker
from channels.config import load_channels
from core.settings import SECRET_PREFIX, variables
from runtime.secrets import SecretStore
from tests.cli.test_background import embedded
from tests.links import broken_links

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PYTHON = ".venv/bin/python"


def blocks(lang: str, text: str | None = None) -> list[str]:
    """The README's fenced blocks of ``lang``, in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```", text or README.read_text(encoding="utf-8"), re.S | re.M)


def commands() -> list[list[str]]:
    """Each command of the README's bash blocks as words: comments dropped, ``&&`` chains split."""
    found = []
    for block in blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            while words:
                head, words = (words[:words.index("&&")], words[words.index("&&") + 1:]) if "&&" in words \
                    else (words, [])
                found.append(head)
    return found


def assignments(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """``NAME=value`` words before a command (or after ``export``), and the rest."""
    env: dict[str, str] = {}
    rest = words[1:] if words[:1] == ["export"] else words
    while rest and re.fullmatch(r"[A-Z][A-Z0-9_]*=.*", rest[0]):
        name, _, value = rest[0].partition("=")
        env[name] = value
        rest = rest[1:]
    return env, rest


def test_the_readme_is_short():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_the_readme_has_commands_and_every_one_is_known():
    """A command no check below covers would go untested: name it here first."""
    found = commands()
    assert found and found[0][:3] == ["python3", "-m", "venv"]
    for words in found:
        _, rest = assignments(words)
        assert not rest or rest[:3] == ["python3", "-m", "venv"] or rest[:2] == [".venv/bin/pip", "install"] \
            or (rest[:1] == [PYTHON] and rest[1] in ("starter.py", "worker.py")) \
            or rest == [PYTHON, "-m", "pytest", "-q"], f"unchecked: {shlex.join(words)}"


def test_every_variable_the_readme_sets_is_one_the_settings_read():
    known = set(variables())
    for words in commands():
        env, _ = assignments(words)
        for name in env:
            assert name in known or name.startswith(SECRET_PREFIX), f"{name} is read by no setting"


def test_the_set_up_installs_extras_the_package_has():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    installs = [w for w in commands() if w[:2] == [".venv/bin/pip", "install"]]
    assert installs
    for words in installs:
        for spec in (w for w in words if w.startswith(".[")):
            assert set(spec[2:-1].split(",")) <= set(extras), spec


def test_the_test_command_is_the_one_ci_runs():
    (first_block_test,) = [w for w in commands() if w[1:3] == ["-m", "pytest"]]
    ci_last = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert shlex.join(first_block_test) == ci_last == f"{PYTHON} -m pytest -q"


def cli_commands() -> list[tuple[str, list[str]]]:
    """(script, its arguments) for each ``.venv/bin/python starter.py|worker.py ...`` of the README."""
    found = []
    for words in commands():
        _, rest = assignments(words)
        if rest[:1] == [PYTHON] and rest[1] in ("starter.py", "worker.py"):
            found.append((rest[1], rest[2:]))
    return found


@pytest.mark.parametrize("script, argv", cli_commands(), ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_the_cli_parses_the_readme_command(script, argv):
    if script == "worker.py":
        worker.parse_args(argv)
        return
    args = starter.parser().parse_args(argv)
    assert args.command == argv[0]


def test_the_chat_example_is_a_channels_file_the_gateway_loads(tmp_path):
    (config,) = blocks("toml")
    (gateway,) = [words for words in commands() if "gateway" in words]
    env, rest = assignments(gateway)
    path = tmp_path / rest[rest.index("--config") + 1]
    path.write_text(config)
    secrets = SecretStore({name.removeprefix(SECRET_PREFIX): value for name, value in env.items()})
    (channel,) = load_channels(path, secrets)
    assert channel.type == "telegram" and channel.approvers and set(channel.approvers) <= set(channel.allowed_users)
    assert channel.model_extra and channel.model_extra["bot_token"] == env[f"{SECRET_PREFIX}TELEGRAM_BOT_TOKEN"]
    assert len(config.splitlines()) + 1 <= 5  # "chat in five lines": the file and the command


async def test_the_set_up_command_runs_a_task_to_done_on_the_embedded_defaults(tmp_path):
    (demo,) = [argv for script, argv in cli_commands() if "--demo" in argv]
    workspace = tmp_path / "here"
    workspace.mkdir()
    async with embedded(tmp_path) as env:  # its own data directory and port; stopped at the end
        proc = await asyncio.create_subprocess_exec(  # in the directory it takes notes on, as a person runs it
            sys.executable, str(ROOT / "starter.py"), *demo, cwd=workspace, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out_b, err_b = await asyncio.wait_for(proc.communicate(), 90)
    out, err = out_b.decode(), err_b.decode()
    assert proc.returncode == 0, err
    assert "DONE" in out and (workspace / "AGENT_DEMO.md").is_file()


def test_every_relative_link_of_the_readme_and_docs_leads_somewhere():
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    assert broken_links(pages, ROOT) == []


def docs_cli_commands() -> list[list[str]]:
    """The ``starter.py`` commands of docs/'s bash blocks, as arguments."""
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for block in blocks("bash", page.read_text(encoding="utf-8")):
            for line in block.replace("\\\n", " ").splitlines():
                _, rest = assignments(shlex.split(line, comments=True))
                if "starter.py" in rest:
                    found.append(rest[rest.index("starter.py") + 1:])
    return found


@pytest.mark.parametrize("argv", docs_cli_commands(), ids=" ".join)
def test_the_cli_parses_the_docs_commands(argv):
    assert starter.parser().parse_args(argv).command == argv[0]
