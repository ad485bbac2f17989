"""`--network` reaches the task input (shell commands are cut off from the network without it)."""

from __future__ import annotations

from cli.tasks import task_input
from tests.configured import cli_args


def test_network_is_off_unless_asked_for(tmp_path):
    base = ["start", "--workspace", str(tmp_path), "do it"]
    assert task_input(cli_args(base), "m").network is False
    assert task_input(cli_args([*base[:-1], "--network", "do it"]), "m").network is True
