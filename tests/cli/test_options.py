"""Task options on the command line become the task's input."""

from __future__ import annotations

import pytest

from cli.tasks import UserError, task_input
from contracts.task import TaskInput
from tests.configured import cli_args


def test_continue_as_new_after_sets_the_turns_per_run(workspace):
    args = cli_args(["start", "--workspace", str(workspace), "--continue-as-new-after", "7", "go"])
    assert task_input(args, "m").continue_as_new_after == 7


def test_continue_as_new_after_defaults_to_the_task_default(workspace):
    args = cli_args(["start", "--workspace", str(workspace), "go"])
    assert task_input(args, "m").continue_as_new_after == TaskInput.model_fields["continue_as_new_after"].default


def test_continue_as_new_after_refuses_zero(capsys):
    with pytest.raises(SystemExit):
        cli_args(["start", "--continue-as-new-after", "0", "go"])
    assert "must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(("option", "value", "said"), [
    ("--max-iterations", "0", "must be at least 1"),
    ("--max-iterations", "-5", "must be at least 1"),
    ("--cost-limit", "-1", "must be 0 or more"),
    ("--cost-limit", "nan", "expected a finite number"),
    ("--approval-timeout", "-10", "must be more than 0 seconds"),
    ("--failover-after", "0", "must be at least 1"),
    ("--provider-wait", "-1", "must be 0 or more seconds"),
    ("--provider-wait", "soon", "expected a number"),
])
def test_a_number_that_would_fail_the_task_later_is_refused_at_the_door(capsys, option, value, said):
    with pytest.raises(SystemExit) as exit_:
        cli_args(["start", f"{option}={value}", "go"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert said in err[-1] and option in err[-1]  # one line naming the option


@pytest.mark.parametrize(("text", "said"), [
    ("   ", "the task is empty"),
    ("fix \udcff the bug", "not valid UTF-8 (byte 0xff at position 4)"),  # argv's undecodable byte
])
def test_an_empty_or_undecodable_task_is_refused_in_one_line(workspace, text, said):
    args = cli_args(["start", "--workspace", str(workspace), text])
    with pytest.raises(UserError, match=said.replace("(", r"\(").replace(")", r"\)")):
        task_input(args, "m")


def test_the_workspaces_permissions_file_is_read_into_the_task_input(workspace):
    (workspace / ".agent").mkdir()
    (workspace / ".agent" / "permissions.toml").write_text('allow = ["shell(git status)"]\ndeny = ["shell(git push)"]\n')
    inp = task_input(cli_args(["start", "--workspace", str(workspace), "go"]), "m")
    assert [r.text for r in inp.permissions.allow] == ["shell(git status)"]
    assert [r.text for r in inp.permissions.deny] == ["shell(git push)"]
    assert inp.permissions.source == str(workspace / ".agent" / "permissions.toml")
    assert TaskInput.model_validate_json(inp.model_dump_json()).permissions == inp.permissions  # as recorded


def test_permissions_names_another_file_and_a_bad_one_is_one_line(workspace, tmp_path):
    other = tmp_path / "rules.toml"
    other.write_text('deny = ["fetch_url"]')
    args = cli_args(["start", "--workspace", str(workspace), "--permissions", str(other), "go"])
    assert [r.text for r in task_input(args, "m").permissions.deny] == ["fetch_url"]
    other.write_text('deny = ["shell(git push"]')
    with pytest.raises(UserError, match=r"rules.toml: 'shell\(git push' is not a rule"):
        task_input(args, "m")
    args = cli_args(["start", "--workspace", str(workspace), "--permissions", str(tmp_path / "none"), "go"])
    with pytest.raises(UserError, match="permissions file .*none: No such file"):
        task_input(args, "m")


def test_without_a_permissions_file_the_task_input_records_no_rules(workspace):
    inp = task_input(cli_args(["start", "--workspace", str(workspace), "go"]), "m")
    assert not inp.permissions.allow and not inp.permissions.deny
    assert "permissions" not in inp.model_dump(mode="json")  # nothing added to every task's history
