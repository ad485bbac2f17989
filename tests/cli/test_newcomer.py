"""A newcomer's mistakes each get one line that says what to do (issue 40): a mistyped command
or option, a missing provider key, a filter on search attributes the namespace lacks; and
every hint is a command that works as typed: under the name the person used, with the
connection options they gave."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest

import starter
from cli.hints import invoked, program
from core.settings import ProviderSettings, TemporalSettings
from providers.keys import missing_key
from temporal.server import port_open
from tests.cli.test_background import ROOT, embedded_env
from tests.cli.test_background import starter as run_starter
from tests.cli.test_cli import cli


@pytest.mark.parametrize("argv, suggestion", [
    (["stauts", "x"], "did you mean 'status'?"),
    (["status", "x", "--jsn"], "did you mean '--json'?"),
    (["server", "stauts"], "did you mean 'status'?"),
    (["list", "--adress", "h:1"], "did you mean '--address'?"),
])
def test_a_mistyped_command_or_option_suggests_the_nearest(argv, suggestion, capsys):
    with pytest.raises(SystemExit):
        starter.parser().parse_args(argv)
    assert suggestion in capsys.readouterr().err


def test_a_word_far_from_every_command_suggests_nothing(capsys):
    with pytest.raises(SystemExit):
        starter.parser().parse_args(["xyzzy"])
    assert "did you mean" not in capsys.readouterr().err


@pytest.mark.parametrize("mode, settings, variable", [
    ("openai", ProviderSettings(), "OPENAI_API_KEY"),
    ("openai_responses", ProviderSettings(), "OPENAI_API_KEY"),
    ("anthropic", ProviderSettings(), "ANTHROPIC_API_KEY"),
    ("anthropic_xml", ProviderSettings(), "ANTHROPIC_API_KEY"),
    ("anthropic_xml", ProviderSettings(xml_wire="openai"), "OPENAI_API_KEY"),
    ("openai", ProviderSettings(openai_base_url="http://127.0.0.1:8080/v1"), None),  # a local server
    ("openai", ProviderSettings(openai_api_key="sk-x"), None),
    ("anthropic", ProviderSettings(anthropic_api_key="k"), None),
])
def test_a_missing_key_is_named_only_where_the_providers_own_service_needs_it(mode, settings, variable):
    problem = missing_key(mode, settings)
    assert (problem is None) == (variable is None)
    if variable:
        assert problem is not None and problem.startswith(f"{variable} is not set")


async def test_start_without_the_providers_key_says_so_before_anything_starts(tmp_path, workspace):
    env = {k: v for k, v in embedded_env(tmp_path, AGENT_MODEL="gpt-4o-mini").items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    code, out, err = await run_starter(env, "start", "--workspace", str(workspace), "hello")
    assert code == 2 and err.strip().splitlines() == [
        "error: OPENAI_API_KEY is not set: provider openai calls https://api.openai.com/v1, which needs it "
        "(export OPENAI_API_KEY=…)"]
    assert not port_open("127.0.0.1", int(env["AGENT_EMBEDDED_PORT"]))  # no server, no worker, no task


async def test_a_worker_without_the_providers_key_says_so_at_start(client, task_queue):
    env = {k: v for k, v in embedded_env(Path(".")).items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(TEMPORAL_ADDRESS=client.service_client.config.target_host, AGENT_TASK_QUEUE=task_queue,
               AGENT_PROVIDER="anthropic")
    proc = await asyncio.create_subprocess_exec(sys.executable, str(ROOT / "worker.py"), "--processes", "1",
                                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        line = await asyncio.wait_for(proc.stderr.readline(), 60)
        while line and b"ANTHROPIC_API_KEY" not in line:
            line = await asyncio.wait_for(proc.stderr.readline(), 60)
        assert line.decode().startswith("ANTHROPIC_API_KEY is not set")
    finally:
        proc.terminate()
        await proc.wait()


async def test_list_by_state_on_a_namespace_without_the_search_attributes_prints_how_to_register_them(client):
    namespace = f"bare-{uuid.uuid4().hex[:8]}"
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(namespace=namespace, workflow_execution_retention_period=Duration(seconds=86400)))
    for _ in range(50):  # a new namespace reaches the frontend's cache within seconds
        code, out, err = await cli(client, "list", "--state", "DONE", "--namespace", namespace)
        if "not found" not in err:
            break
        await asyncio.sleep(0.2)
    assert code == 2 and "INVALID_ARGUMENT" not in err
    assert (f"register them once with: temporal operator search-attribute create --namespace {namespace} "
            "--name AgentState --type Keyword") in err


def test_hints_name_the_program_as_invoked_and_repeat_the_options_given(monkeypatch):
    given = TemporalSettings(address="h:7233", namespace="ns", given=(("address", "h:7233"), ("namespace", "ns")))
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/durable-agent", "start"])
    assert program() == "durable-agent"
    assert invoked("watch T", given) == "durable-agent watch T --address h:7233 --namespace ns"
    monkeypatch.setattr(sys, "argv", ["starter.py", "start"])
    assert invoked("watch T", TemporalSettings(address="from-env:7233")) == "python starter.py watch T"


async def test_the_installed_command_and_its_flags_are_in_starts_hints(client, task_queue, workspace, tmp_path):
    script = tmp_path / "durable-agent"  # what pip writes for the console script, run from this checkout
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                      "from starter import entry\nentry()\n")
    script.chmod(0o755)
    address = client.service_client.config.target_host
    code, out, err = await cli(client, "start", "--address", address, "--workspace", str(workspace), "hi",
                               queue=task_queue, program=str(script))
    assert code == 0, err
    workflow_id = out.strip().splitlines()[-1]
    assert f"follow it with: durable-agent watch {workflow_id} --address {address}" in err
    assert f"start one with: durable-agent worker --address {address}" in err
