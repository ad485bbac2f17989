"""Every activity a workflow calls is registered by the worker that runs that workflow.

A workflow names its activities by string constant (``LLM_ACTIVITY``) or by function
reference; a worker registers them through its plugin (``temporal.plugin.AgentPlugin``). A
name on one side only is a task stuck on "activity not registered" until it times out. Two
sources of the names called: the ``workflow.execute_activity``/``start_activity`` calls (local
ones too) in the workflow's modules, read from the source; and the activities the committed
histories scheduled (a run of the previous release may still schedule them).
"""

from __future__ import annotations

import ast
import base64
import importlib
import json
from collections.abc import Callable
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client

from channels.gateway import gateway_plugin
from temporal.plugin import AgentPlugin
from tests import configured
from worker import TaskServices, task_plugin

ROOT = Path(__file__).resolve().parent.parent
HISTORIES = ROOT / "tests" / "histories"
STARTS = {"execute_activity", "start_activity", "execute_local_activity", "start_local_activity"}


def _module_file(module: str) -> Path:
    return ROOT / Path(*module.split(".")).with_suffix(".py")


def workflow_modules(cls: type) -> list[str]:
    """The workflows/ modules ``cls``'s module imports, directly or not, itself included."""
    seen, todo = [], [cls.__module__]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.append(module)
        for node in ast.walk(ast.parse(_module_file(module).read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                todo += [n for n in names if n.startswith("workflows.") and _module_file(n).is_file()]
    return seen


def _activity_name(value: object, where: str) -> str:
    if isinstance(value, str):
        return value
    defn = activity._Definition.from_callable(value) if callable(value) else None
    assert defn is not None and defn.name, f"{where}: {value!r} is neither an activity name nor an activity"
    return defn.name


def _value(node: ast.expr, namespace: dict[str, object], where: str) -> object:
    """What the activity argument names as written: a string, a module-level name, or a dotted
    reference (``SomeActivities.method``)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return namespace[node.id]
    if isinstance(node, ast.Attribute):
        return getattr(_value(node.value, namespace, where), node.attr)
    raise AssertionError(f"{where}: an activity named by an expression this test cannot read")


def called_in_source(cls: type) -> dict[str, str]:
    """Activity name -> where ``cls`` (and the workflow modules it imports) calls it."""
    called = {}
    for module in workflow_modules(cls):
        namespace = vars(importlib.import_module(module))
        for node in ast.walk(ast.parse(_module_file(module).read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STARTS
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "workflow"):
                continue
            where = f"{module}:{node.lineno}"
            assert node.args, f"{where}: the activity is not the first argument"
            called[_activity_name(_value(node.args[0], namespace, where), where)] = where
    return called


def scheduled_in_histories(workflow_type: str) -> dict[str, str]:
    """Activity name -> the committed history of a ``workflow_type`` run that scheduled it
    (as an activity, or as a local activity's marker)."""
    scheduled = {}
    for path in sorted(HISTORIES.rglob("*.json")):
        events = json.loads(path.read_text())["events"]
        started = events[0]["workflowExecutionStartedEventAttributes"]["workflowType"]["name"]
        if started != workflow_type:
            continue
        for event in events:
            if attrs := event.get("activityTaskScheduledEventAttributes"):
                scheduled[attrs["activityType"]["name"]] = path.name
            marker = event.get("markerRecordedEventAttributes")
            if marker and marker["markerName"] == "core_local_activity":
                data = json.loads(base64.b64decode(marker["details"]["data"]["payloads"][0]["data"]))
                scheduled[data["activity_type"]] = path.name
    return scheduled


def unregistered(plugin: AgentPlugin) -> list[str]:
    """Each activity a workflow of ``plugin`` calls that ``plugin`` does not register, with where."""
    registered = plugin.activity_names()
    missing = []
    for cls in plugin.registered_workflows:
        calls = {**scheduled_in_histories(workflow._Definition.must_from_class(cls).name), **called_in_source(cls)}
        missing += [f"{name} (called at {where})" for name, where in sorted(calls.items()) if name not in registered]
    return missing


def plugins(client: Client) -> dict[str, AgentPlugin]:
    """The plugins of the two workers that run workflows: a task worker's and the gateway's."""
    config = configured.settings()
    return {"tasks": task_plugin(client, TaskServices.build(client, config), config, own_queue="q@me"),
            "gateway": gateway_plugin({})}


def _without(plugin: AgentPlugin, keep: Callable[[Callable], bool]) -> AgentPlugin:
    return AgentPlugin("dropped", workflows=plugin.registered_workflows,
                       activities=[a for a in plugin.registered_activities if keep(a)])


async def test_every_activity_a_workflow_calls_is_registered_by_its_worker(client: Client):
    for name, plugin in plugins(client).items():
        missing = unregistered(plugin)
        assert not missing, f"the {name} worker does not register {', '.join(missing)}"


async def test_the_check_reads_both_the_source_and_the_histories(client: Client):
    """Not vacuous: the calls found in the source and in the histories are the ones expected."""
    from workflows.conversation import ConversationWorkflow
    from workflows.task import AgentTaskWorkflow

    assert set(called_in_source(AgentTaskWorkflow)) == {
        "llm_call", "tool_call", "prompt_context", "session_load", "session_record", "redact_text", "browser_close",
        "mcp_list_tools", "save_attachments"}
    assert set(called_in_source(ConversationWorkflow)) == {"deliver", "fetch_attachments"}
    assert {"llm_call", "tool_call", "mcp_list_tools", "browser_close"} <= set(scheduled_in_histories("AgentTask"))
    assert "deliver" in scheduled_in_histories("Conversation")


async def test_an_activity_dropped_from_a_plugin_is_caught(client: Client):
    for name, plugin in plugins(client).items():
        for dropped in plugin.registered_activities:
            lacking = _without(plugin, lambda a, d=dropped: a is not d)
            missing = unregistered(lacking)
            assert len(missing) == 1 and missing[0].startswith(_activity_name(dropped, name) + " "), missing
