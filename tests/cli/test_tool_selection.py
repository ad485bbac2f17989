"""--tools, --allow-tools, --deny-tools and --mcp-config reach the task input."""

from __future__ import annotations

import argparse
import json

import pytest

from cli.options import add_task_options
from cli.tasks import UserError, task_input
from tests.configured import cli_args


def args_for(*options: str):
    return cli_args(["start", "do it", *options])


def test_tool_options_and_the_mcp_config_reach_the_task_input(tmp_path, monkeypatch):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "git": {"command": "mcp-server-git", "env": {"TOKEN": "literal-token-value"}},
        "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "{{secret:WEB}}"}},
    }}))
    monkeypatch.setenv("AGENT_SECRET_GH", "literal-token-value")
    monkeypatch.delenv("AGENT_MCP_CONFIG", raising=False)
    inp = task_input(args_for("--workspace", str(tmp_path), "--mcp-config", str(config), "--tools", "f*,mcp__git__*",
                              "--allow-tools", "file,mcp__*", "--deny-tools", "mcp__git__git_reset"), "m")
    assert inp.tools == ["file", "fetch_url", "f*", "mcp__git__*"]
    assert inp.allow_tools == ["file", "mcp__*"] and inp.deny_tools == ["mcp__git__git_reset"]
    assert inp.mcp_servers["git"].env == {"TOKEN": "{{secret:GH}}"}  # the CLI never sends a secret it knows
    assert inp.mcp_servers["web"].type == "http" and not inp.worker_mcp
    assert inp.offered_tools(["mcp__git__git_status", "mcp__git__git_reset"]) == ["message", "file", "mcp__git__git_status"]


def test_the_worker_servers_are_listed_when_the_cli_has_agent_mcp_config(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_MCP_CONFIG", str(tmp_path / "servers.json"))
    assert task_input(args_for("--workspace", str(tmp_path)), "m").worker_mcp


@pytest.mark.parametrize("options, problem", [
    (["--tools", "shel"], "unknown tool 'shel'"),
    (["--mcp-config", "/nonexistent.json"], "cannot read the MCP config"),
])
def test_bad_tool_options_are_one_line_errors(tmp_path, options, problem):
    with pytest.raises(UserError, match=problem):
        task_input(args_for("--workspace", str(tmp_path), *options), "m")


def test_every_task_option_parser_has_the_tool_options():
    p = argparse.ArgumentParser()
    add_task_options(p)
    parsed = p.parse_args(["--deny-tools", "a, b*"])
    assert parsed.deny_tools == ["a", "b*"] and parsed.tools is None and parsed.mcp_config is None
