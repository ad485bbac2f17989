"""The one way a command is added: a module in ``cli/commands/`` with ``register`` and ``run``,
listed in ``COMMANDS``, which ``starter.py`` loops over."""

from __future__ import annotations

import argparse
import inspect
import tomllib
from pathlib import Path

import pytest

import cli.commands
import cli.version
from cli.commands import COMMANDS
from cli.version import package_version
from starter import parser

COMMAND_NAMES = [
    "run", "start", "status", "watch", "stop", "approve", "interject", "reply", "list",
    "rewind", "fork", "schedule", "eval", "record", "mcp-serve", "worker", "gateway", "server",
]  # fmt: skip


def _subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_command_module_has_register_and_an_async_run():
    for module in COMMANDS:
        assert inspect.isfunction(module.register), module.__name__
        assert inspect.iscoroutinefunction(module.run), module.__name__


def test_every_module_in_the_commands_folder_is_listed_once():
    folder = Path(cli.commands.__file__).parent
    names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    assert sorted(m.__name__.rsplit(".", 1)[1] for m in COMMANDS) == sorted(names)


def test_the_parser_lists_the_commands_in_order():
    assert list(_subcommands(parser())) == COMMAND_NAMES


@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_each_command_runs_the_run_of_the_module_that_registered_it(name):
    owners = {}
    for module in COMMANDS:
        probe = argparse.ArgumentParser().add_subparsers()
        module.register(probe)
        owners.update(dict.fromkeys(probe.choices, module))
    assert _subcommands(parser())[name].get_default("run") is owners[name].run


def test_a_parsed_command_carries_its_run():
    from cli.commands import interject, schedule

    assert parser().parse_args(["reply", "task-1", "yes"]).run is interject.run
    assert parser().parse_args(["schedule", "trigger", "nightly"]).run is schedule.run


def test_version_is_the_packages(capsys):
    with pytest.raises(SystemExit) as exited:
        parser().parse_args(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"durable-agent {package_version()}"
    assert package_version()[0].isdigit()


def test_version_falls_back_to_pyproject_outside_an_install(monkeypatch):
    def not_installed(name: str) -> str:
        raise cli.version.PackageNotFoundError(name)

    monkeypatch.setattr(cli.version, "version", not_installed)
    pyproject = tomllib.loads((Path(cli.version.__file__).parents[1] / "pyproject.toml").read_text())
    assert package_version() == pyproject["project"]["version"]
