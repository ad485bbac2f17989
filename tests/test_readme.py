"""Every command and example on the README works as written. On the embedded defaults, run for
real: the set-up command's task runs end to end; the "real model" block, pointed at a local
OpenAI-compatible server (the scripted one), runs its task to done; the "approve and watch" block
starts a task that waits, lists it, watches it and approves it to its end. The test command is
the one CI runs; the chat block's file is one the gateway loads; every CLI command is parsed by
the CLI's own parser, every variable set is one the settings read, and every relative link of
the README and of docs/ leads to a file and a heading. A command this module does not know fails it."""

from __future__ import annotations

import asyncio
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter

import starter
import worker
from channels.config import load_channels
from contracts.task import TaskOutcome, TaskState
from core.settings import SECRET_PREFIX, variables
from fakes.scripted import ScriptedModelServer, tool
from runtime.secrets import SecretStore
from tests.cli.test_background import embedded
from tests.links import broken_links
from workflows.task import AgentTaskWorkflow

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PYTHON = ".venv/bin/python"


def section(heading: str) -> str:
    """The README's text under ``## heading``, up to the next heading."""
    text = README.read_text(encoding="utf-8")
    (found,) = re.findall(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    return found


def blocks(lang: str, text: str | None = None) -> list[str]:
    """The README's fenced blocks of ``lang``, in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```", text or README.read_text(encoding="utf-8"), re.S | re.M)


def commands(text: str | None = None) -> list[list[str]]:
    """Each command of the README's bash blocks (or of ``text``'s) as words: comments dropped,
    ``&&`` chains split."""
    found = []
    for block in blocks("bash", text):
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


REAL_MODEL, APPROVE_AND_WATCH = "A real model in three lines", "Approve and watch"
LOCAL_MODEL = "local-llama-q4"  # a name the model tables do not know: its window is read from the server


def test_the_blocks_run_for_real_are_the_readme_s_cli_commands_but_the_gateway():
    """What the test below runs is every CLI command of its two sections, and with the set-up
    command and the gateway (the chat test) that is every CLI command of the README."""
    ran = [rest for words in commands(section(REAL_MODEL)) + commands(section(APPROVE_AND_WATCH))
           for _, rest in [assignments(words)] if rest]
    assert [w[2] for w in ran] == ["run", "start", "list", "watch", "approve"]
    others = [argv for script, argv in cli_commands() if [PYTHON, script, *argv] not in ran]
    assert [argv[0] for argv in others] == ["run", "gateway"] and "--demo" in others[0]


async def readme_command(env: dict[str, str], words: list[str], cwd: Path, stdin: bytes = b"",
                         timeout_s: float = 90) -> tuple[int, str, str]:
    """One README command as a person types it in ``cwd`` (``.venv/bin/python``: this Python)."""
    assert words[:1] == [PYTHON]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / words[1]), *words[2:], cwd=cwd, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin), timeout_s)
    return proc.returncode or 0, out.decode(), err.decode()


def shell_steps(env: dict[str, str], block: str, **overrides: str) -> tuple[dict[str, str], list[list[str]]]:
    """A block's exports applied to ``env`` (as the shell keeps them for the next block), with
    ``overrides`` winning; and its other commands, in order."""
    env, rest = dict(env), []
    for words in commands(block):
        assigned, command = assignments(words)
        if words[:1] == ["export"]:
            env.update(assigned)
        else:
            rest.append(command)
    env.update(overrides)
    return env, rest


async def waiting_for(handle: WorkflowHandle, tool_name: str, timeout_s: float = 60) -> None:
    """Returns once the task waits for a person's decision on a call of ``tool_name``."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        status = await handle.query(AgentTaskWorkflow.status)
        if status.pending_approval is not None and status.pending_approval.tool == tool_name:
            return
        assert asyncio.get_running_loop().time() < deadline, f"not waiting for a {tool_name} call: {status}"
        await asyncio.sleep(0.1)


async def test_the_real_model_and_approve_and_watch_blocks_run_on_a_local_openai_compatible_server(tmp_path):
    """The two blocks in one shell, in a directory with TODOs and logs: the exports of the first
    stay for the second, with OPENAI_BASE_URL at the scripted server and a model the tables do
    not know; TASK_ID is what ``start`` printed last."""
    here = tmp_path / "repo"
    (here / "logs").mkdir(parents=True)
    (here / "app.py").write_text("print('hi')  # TODO: greet by name\n")
    (here / "logs" / "old.log").write_text("yesterday\n")
    todo = "# TODO\n\n- app.py:1 greet by name\n"
    steps = [tool("shell", command="grep -rn TODO --include=*.py ."),
             tool("file", action="write", path="TODO.md", content=todo),
             tool("message", type="result", text="listed 1 TODO in TODO.md"),
             tool("message", type="result", text="listed 1 TODO in TODO.md"),  # after the reminder to verify
             tool("shell", command="rm logs/old.log"),  # waits: --approval always
             tool("message", type="result", text="removed logs/old.log"),
             tool("message", type="result", text="removed logs/old.log")]
    with ScriptedModelServer(steps, window=32_768) as model:
        async with embedded(tmp_path) as base:
            env, (run,) = shell_steps(base, section(REAL_MODEL), OPENAI_BASE_URL=model.url, AGENT_MODEL=LOCAL_MODEL)
            assert env["OPENAI_API_KEY"] == "sk-..."  # as written: a local server takes any key
            code, out, err = await readme_command(env, run, here)
            assert code == 0 and "DONE" in out, out + err
            assert f"started a worker for {LOCAL_MODEL} · openai at {model.url} in the background" in err
            assert (here / "TODO.md").read_text() == todo

            env, (start, listing, watch, approve) = shell_steps(env, section(APPROVE_AND_WATCH))
            code, out, err = await readme_command(env, start, here)
            assert code == 0, err
            assert "started a worker" not in err  # the same settings: the same background worker
            task_id = out.strip().splitlines()[-1]
            client = await Client.connect(f"127.0.0.1:{env['AGENT_EMBEDDED_PORT']}",
                                          data_converter=pydantic_data_converter)
            handle = client.get_workflow_handle(task_id, result_type=TaskOutcome)
            await waiting_for(handle, "shell")

            code, out, err = await readme_command(env, listing, here)
            assert code == 0 and task_id in out and "rm logs/old.log" in out, out + err
            assert f"approve {task_id}" in out  # the command that answers it

            substituted = [task_id if w == "TASK_ID" else w for w in watch]
            watching = asyncio.create_task(readme_command(env, substituted, here))
            substituted = [task_id if w == "TASK_ID" else w for w in approve]
            code, out, err = await readme_command(env, substituted, here)  # as written, with no terminal to ask at
            assert code == 2 and "rm logs/old.log" in out and "--yes" in err, out + err
            code, out, err = await readme_command(env, [*substituted, "--yes"], here)
            assert code == 0 and "approved: shell call" in out and task_id in out, out + err
            # --approval always asks for the report too: yes, and for the rest of the task.
            await waiting_for(handle, "message")
            code, out, err = await readme_command(env, [*substituted, "--yes", "--remember"], here)
            assert code == 0 and "approved: message call" in out, out + err

            code, out, err = await watching
            assert code == 0 and "DONE" in out and "removed logs/old.log" in out, out + err
            outcome = await asyncio.wait_for(handle.result(), 30)
            assert outcome.status == TaskState.DONE and not (here / "logs" / "old.log").exists()
            model.assert_consumed()
