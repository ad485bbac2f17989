"""What ``mcp-serve`` lets a client do: its token (kept in the data directory, 0600, reused)
and the workspace and approval rules ``start_task`` keeps on either transport. The token
over real HTTP is in tests/cli/test_mcp_serve.py."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from mcp import Client

from cli.commands.mcp_serve import build_server
from cli.mcp_access import TOKEN_FILE, serve_token
from cli.tasks import started_input
from contracts.task import ApprovalMode
from starter import main
from tests.configured import cli_args


def test_the_token_is_made_once_in_the_data_directory_readable_by_its_owner_only(tmp_path):
    first = serve_token("", tmp_path)
    assert first.file == tmp_path / TOKEN_FILE and len(first.value) >= 40
    assert stat.S_IMODE(first.file.stat().st_mode) == 0o600
    assert serve_token("", tmp_path) == first  # a restarted server: the clients' token still works


def test_agent_mcp_token_is_used_as_given_and_nothing_is_written(tmp_path):
    token = serve_token("operator-chosen", tmp_path)
    assert token.value == "operator-chosen" and token.file is None
    assert not (tmp_path / TOKEN_FILE).exists()
    assert "operator-chosen" not in token.notice("http://127.0.0.1:1/mcp")  # already the operator's


def test_a_token_file_left_readable_by_others_is_tightened(tmp_path):
    (tmp_path / TOKEN_FILE).write_text("kept\n")
    (tmp_path / TOKEN_FILE).chmod(0o644)
    assert serve_token("", tmp_path).value == "kept"
    assert stat.S_IMODE((tmp_path / TOKEN_FILE).stat().st_mode) == 0o600


@pytest.fixture(autouse=True)
def key(monkeypatch):
    """A key for the default provider: these tests are about workspaces and approvals, and a
    command on the embedded default stops first when the key its worker needs is missing."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


def served(client, root: Path, *options: str):
    """An in-process client of ``mcp-serve --workspace root [options]``."""
    args = cli_args(["mcp-serve", "--workspace", str(root), "--model", "m", *options])
    return Client(build_server(client, args, root))


@pytest.fixture
def root(tmp_path) -> Path:
    """The server's workspace: it holds the test's data directory (tmp_path/data) too."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "data").mkdir(exist_ok=True)
    return tmp_path


async def refused(mcp: Client, **arguments: str) -> str:
    result = await mcp.call_tool("start_task", {"instruction": "go", **arguments})
    assert result.is_error, result.content
    return result.content[0].text


@pytest.mark.parametrize(("workspace", "said"), [
    ("/", "outside"),
    ("/tmp", "outside"),
    ("ws/../..", "outside"),
    ("data", "inside the agent's data directory"),
    ("data/sub/..", "inside the agent's data directory"),
])
async def test_start_task_refuses_a_workspace_outside_the_servers_or_in_the_data_directory(
        client, root, workspace, said):
    async with served(client, root) as mcp:
        assert said in await refused(mcp, workspace=workspace)


async def test_start_task_refuses_a_symlink_out_of_the_servers_workspace(client, root, tmp_path_factory):
    (root / "ws" / "out").symlink_to(tmp_path_factory.mktemp("elsewhere"))
    async with served(client, root) as mcp:
        assert "outside" in await refused(mcp, workspace="ws/out")


async def test_start_task_refuses_approval_never_unless_the_server_was_started_with_it(client, root):
    async with served(client, root) as mcp:
        assert "--approval never" in await refused(mcp, workspace="ws", approval="never")
        assert "not one of" in await refused(mcp, workspace="ws", approval="sometimes")


async def test_a_server_started_with_approval_never_hands_it_out_for_a_workspace_under_its_own(
        client, root, task_queue, monkeypatch):
    monkeypatch.setenv("AGENT_TASK_QUEUE", task_queue)  # nobody serves it: the task only has to start
    async with served(client, root, "--approval", "never") as mcp:
        result = await mcp.call_tool("start_task", {"instruction": "go", "workspace": "ws", "approval": "never"})
    assert not result.is_error, result.content
    workflow_id = json.loads(result.content[0].text)["workflow_id"]
    inp = await started_input(client, await client.get_workflow_handle(workflow_id).describe())
    assert inp is not None and inp.approval == ApprovalMode.NEVER and inp.workspace == str(root / "ws")
    await client.get_workflow_handle(workflow_id).terminate("test over")


@pytest.mark.parametrize("command", [
    ["start", "--model", "m", "go"],
    ["run", "--model", "m", "go"],
    ["schedule", "create", "nightly", "--every", "1d", "--model", "m", "go"],
    ["mcp-serve"],
])
@pytest.mark.parametrize("where", ["root", "data"])
def test_a_command_refuses_the_file_system_root_or_the_data_directory_as_workspace_in_one_line(
        capsys, tmp_path, command, where):
    workspace = "/" if where == "root" else str(tmp_path / "data")
    assert main([*command, "--workspace", workspace]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: workspace ")
    assert ("root of the file system" if where == "root" else "inside the agent's data directory") in err
