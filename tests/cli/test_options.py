"""Task options on the command line become the task's input."""

from __future__ import annotations

import pytest

from cli.tasks import task_input
from contracts.task import TaskInput
from starter import parser


def test_continue_as_new_after_sets_the_turns_per_run(workspace):
    args = parser().parse_args(["start", "--workspace", str(workspace), "--continue-as-new-after", "7", "go"])
    assert task_input(args, "m").continue_as_new_after == 7


def test_continue_as_new_after_defaults_to_the_task_default(workspace):
    args = parser().parse_args(["start", "--workspace", str(workspace), "go"])
    assert task_input(args, "m").continue_as_new_after == TaskInput.model_fields["continue_as_new_after"].default


def test_continue_as_new_after_refuses_zero(capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(["start", "--continue-as-new-after", "0", "go"])
    assert "must be at least 1" in capsys.readouterr().err
