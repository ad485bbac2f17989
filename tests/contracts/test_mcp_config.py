"""The mcpServers configuration, MCP tool names, and which tools a task offers."""

from __future__ import annotations

import pytest

from contracts.mcp import McpHints, McpServerConfig, parse_mcp_config, tool_name
from contracts.task import TaskInput
from contracts.toolset import DEFAULT_TOOLS
from core.tool_outcome import Danger


def test_the_usual_mcp_servers_format_parses_with_transports_inferred():
    servers = parse_mcp_config("""{"mcpServers": {
        "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"TOKEN": "{{secret:GH}}"}},
        "remote": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer {{secret:K}}"}},
        "streaming": {"type": "streamable-http", "url": "https://example.test/mcp2"},
        "legacy": {"type": "sse", "url": "https://example.test/sse", "approve": true},
        "off": {"command": "x", "disabled": true, "autoApprove": ["ignored"]}
    }}""")
    assert set(servers) == {"git", "remote", "streaming", "legacy"}
    assert servers["git"].type == "stdio" and servers["git"].env == {"TOKEN": "{{secret:GH}}"}
    assert servers["remote"].type == "http" and servers["streaming"].type == "http"
    assert servers["legacy"].type == "sse" and servers["legacy"].approve == ["*"]


@pytest.mark.parametrize("text, problem", [
    ("not json", "is not JSON"),
    ('{"servers": []}', 'no "mcpServers"'),
    ('{"mcpServers": {"a b": {"command": "x"}}}', "server name 'a b'"),
    ('{"mcpServers": {"a__b": {"command": "x"}}}', "server name 'a__b'"),
    ('{"mcpServers": {"a": {"args": ["x"]}}}', "a stdio server needs a command"),
])
def test_a_bad_configuration_says_what_is_wrong(text, problem):
    with pytest.raises(ValueError, match=problem):
        parse_mcp_config(text)


def test_danger_follows_annotations_unless_the_configuration_overrides():
    config = McpServerConfig(command="x", approve=["send_*"], trust=["wipe_cache"])
    assert config.danger("read", McpHints(read_only=True))[0] is Danger.SAFE
    assert config.danger("drop", McpHints(destructive=True))[0] is Danger.DANGEROUS
    assert config.danger("write", McpHints(read_only=False))[0] is Danger.MODERATE
    assert config.danger("anything", McpHints())[0] is Danger.MODERATE
    assert config.danger("send_mail", McpHints(read_only=True)) == (
        Danger.DANGEROUS, "the MCP configuration asks approval for send_mail")
    assert config.danger("wipe_cache", McpHints(destructive=True))[0] is Danger.SAFE


def test_tool_names_fit_every_provider():
    assert tool_name("git", "git_status") == "mcp__git__git_status"
    assert tool_name("fs", "read.file/v2") == "mcp__fs__read_file_v2"
    assert len(tool_name("s", "x" * 100)) == 64


def test_offered_tools_take_names_and_globs_for_built_in_and_mcp_tools():
    mcp = ["mcp__git__git_status", "mcp__git__git_reset", "mcp__time__get_current_time"]
    base = dict(instruction="x", workspace="/", model="m")
    assert TaskInput(**base).offered_tools(mcp) == [*DEFAULT_TOOLS, *mcp]
    assert TaskInput(**base, tools=["file", "mcp__git__*"]).offered_tools(mcp) == [
        "message", "file", "mcp__git__git_status", "mcp__git__git_reset"]
    assert TaskInput(**base, allow_tools=["f*", "mcp__time__*"]).offered_tools(mcp) == [
        "message", "file", "fetch_url", "mcp__time__get_current_time"]
    assert TaskInput(**base, deny_tools=["shell", "mcp__*__git_reset", "s*"]).offered_tools(mcp) == [
        "message", "file", "plan", "fetch_url", "load_skill", "memory", "visit", "view", "click", "input",
        "mcp__git__git_status", "mcp__time__get_current_time"]  # "s*" took spawn, scroll and screenshot too
