import asyncio
from dataclasses import dataclass
from typing import Literal

import pytest

from contracts.toolset import DEFAULT_TOOLS
from core.messages import ToolCallRequest
from tests import configured
from tools import REGISTRY, classify_call, coerce_args, compact_line, declare, execute, registry, runs_in, specs
from tools.base import Danger, StrictArgs, ToolContext, ToolDefinition, ToolOutcome


class Inner(StrictArgs):
    n: int
    flag: bool = False


class Sample(StrictArgs):
    count: int = 0
    ratio: float = 0.0
    on: bool = False
    name: str = ""
    tags: list[int] = []
    inner: Inner | None = None
    inners: list[Inner] = []
    maybe: int | None = None
    kind: Literal["alpha", "beta"] = "alpha"


SCHEMA = Sample.model_json_schema()


@pytest.fixture
def ctx(tmp_path):
    return configured.tool_context(workspace=tmp_path)


# --- coercion ---------------------------------------------------------------


def test_coerce_args_turns_numeric_strings_into_numbers():
    out = coerce_args(SCHEMA, {"count": "42", "ratio": "4.5"})
    assert out == {"count": 42, "ratio": 4.5}
    assert type(out["count"]) is int


@pytest.mark.parametrize(
    "raw, expected",
    [("true", True), ("false", False), ("1", True), ("0", False), ("yes", True), ("No", False)],
)
def test_coerce_args_turns_boolean_words_into_bools(raw, expected):
    assert coerce_args(SCHEMA, {"on": raw}) == {"on": expected}


def test_coerce_args_turns_a_number_into_a_string_where_a_string_is_expected():
    assert coerce_args(SCHEMA, {"name": 7, "count": 3}) == {"name": "7", "count": 3}


def test_coerce_args_parses_an_array_sent_as_a_json_string_and_coerces_its_items():
    assert coerce_args(SCHEMA, {"tags": '[1, "2", 3]'}) == {"tags": [1, 2, 3]}


def test_coerce_args_follows_refs_into_nested_objects():
    out = coerce_args(SCHEMA, {"inner": '{"n": "3", "flag": "yes"}', "inners": [{"n": "4"}]})
    assert out == {"inner": {"n": 3, "flag": True}, "inners": [{"n": 4}]}
    assert Sample.model_validate(out, strict=True).inner == Inner(n=3, flag=True)


def test_coerce_args_coerces_inside_an_optional_object_sent_as_a_dict():
    assert coerce_args(SCHEMA, {"inner": {"n": "8"}}) == {"inner": {"n": 8}}


def test_coerce_args_handles_optional_fields_declared_as_any_of_null():
    assert coerce_args(SCHEMA, {"maybe": "5"}) == {"maybe": 5}
    assert coerce_args(SCHEMA, {"maybe": None}) == {"maybe": None}
    assert coerce_args(SCHEMA, {"maybe": "null"}) == {"maybe": None}


def test_coerce_args_matches_enum_values_case_insensitively():
    assert coerce_args(SCHEMA, {"kind": "BETA"}) == {"kind": "beta"}


def test_coerce_args_leaves_values_it_cannot_coerce():
    raw = {"count": "many", "ratio": "big", "on": "maybe", "tags": "no json", "inner": 5, "x": "1"}
    assert coerce_args(SCHEMA, raw) == raw


def test_coerced_arguments_pass_strict_validation():
    raw = {"count": "1", "ratio": "2", "on": "0", "name": 3.5, "tags": "[]", "maybe": "7"}
    args = Sample.model_validate(coerce_args(SCHEMA, raw), strict=True)
    got = (args.count, args.ratio, args.on, args.name, args.tags, args.maybe)
    assert got == (1, 2.0, False, "3.5", [], 7)


# --- execute ----------------------------------------------------------------


async def test_execute_unknown_tool_names_it_and_lists_the_available_ones(ctx):
    result = await execute("browse", {}, ctx)
    assert result.status == "error"
    assert "'browse'" in result.content
    for name in DEFAULT_TOOLS:
        assert name in result.content


async def test_execute_with_a_parse_error_asks_for_a_retry_quoting_the_error(ctx, tmp_path):
    error = "Expecting ',' at char 12"
    result = await execute("shell", {"command": "touch ran"}, ctx, parse_error=error)
    assert result.status == "retry"
    assert "not valid JSON" in result.content
    assert "Expecting ',' at char 12" in result.content
    assert not (tmp_path / "ran").exists()


async def test_execute_missing_required_field_asks_for_a_retry_listing_the_fields(ctx):
    result = await execute("shell", {}, ctx)
    assert result.status == "retry"
    assert "- command: Field required" in result.content
    assert "Expected fields: command (required), timeout_s." in result.content
    assert "pydantic.dev" not in result.content


async def test_execute_refuses_an_extra_field_without_running_the_tool(ctx, tmp_path):
    result = await execute("shell", {"command": "touch ran", "cwd": "/"}, ctx)
    assert result.status == "retry"
    assert "- cwd: unknown field" in result.content
    assert not (tmp_path / "ran").exists()


async def test_execute_reports_an_out_of_range_value_with_what_was_sent(ctx):
    result = await execute("shell", {"command": "true", "timeout_s": 99999}, ctx)
    assert result.status == "retry"
    assert "timeout_s" in result.content and "99999" in result.content


async def test_execute_coerces_arguments_before_validating(ctx):
    result = await execute("shell", {"command": 42, "timeout_s": "5"}, ctx)
    assert result.status == "ok"
    assert "command not found" in result.content  # bash ran "42"


class _NoArgs(StrictArgs):
    pass


def _tool_raising(exc: BaseException) -> ToolDefinition:
    async def handler(args: _NoArgs, ctx: ToolContext) -> ToolOutcome:
        raise exc

    return ToolDefinition(name="boom", description="fails", args_model=_NoArgs, handler=handler)


async def test_execute_turns_a_handler_exception_into_an_error_result(ctx, monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, "boom", _tool_raising(RuntimeError("disk on fire")))
    result = await execute("boom", {}, ctx)
    assert result.status == "error"
    assert "RuntimeError: disk on fire" in result.content


async def test_execute_lets_cancellation_propagate(ctx, monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, "boom", _tool_raising(asyncio.CancelledError()))
    with pytest.raises(asyncio.CancelledError):
        await execute("boom", {}, ctx)


# --- specs, danger, compact line ------------------------------------------


def test_specs_are_json_schema_objects_with_the_right_required_fields():
    by_name = {spec.name: spec for spec in specs(DEFAULT_TOOLS)}
    assert list(by_name) == list(DEFAULT_TOOLS)
    expected = {"message": ["type", "text"], "shell": ["command"], "file": ["action"]}
    for name, required in expected.items():
        params = by_name[name].parameters
        assert params["type"] == "object"
        assert params["required"] == required
        assert set(required) <= set(params["properties"])
        assert params["additionalProperties"] is False
        assert by_name[name].description


def test_specs_selects_named_tools_and_refuses_unknown_ones():
    assert [s.name for s in specs(["file"])] == ["file"]
    with pytest.raises(KeyError):
        specs(["file", "browse"])


def test_registry_holds_each_tool_under_its_own_name():
    assert set(DEFAULT_TOOLS) <= set(REGISTRY)  # opt-in tools (search) are extra
    assert all(tool.name == name for name, tool in REGISTRY.items())


@pytest.mark.parametrize(
    "name, arguments, expected",
    [
        ("shell", {"command": "rm -rf build"}, Danger.DANGEROUS),
        ("shell", {"command": "ls -la"}, Danger.SAFE),  # plainly read-only
        ("shell", {"command": "make test"}, Danger.MODERATE),
        ("shell", {}, Danger.MODERATE),  # invalid: the tool's default
        ("file", {"action": "read", "path": "a"}, Danger.SAFE),
        ("file", {"action": "edit", "path": "a", "old": "x", "new": "y"}, Danger.MODERATE),
        ("message", {"type": "result", "text": "ok"}, Danger.SAFE),
        ("browse", {"url": "x"}, Danger.SAFE),
    ],
)
def test_classify_call_gives_each_call_its_danger(name, arguments, expected):
    assert classify_call(name, arguments)[0] is expected


def test_compact_line_uses_the_tool_compact_keys():
    line = compact_line("file", {"action": "read", "path": "a.txt", "content": "x"}, "ok")
    assert line == '<tool name="file" action="read" path="a.txt" status="ok"/>'


def test_compact_line_escapes_and_keeps_one_line():
    line = compact_line("shell", {"command": 'echo "<a>" && ls\ncat b'})
    assert "\n" not in line
    assert "&lt;a&gt;" in line and "&amp;&amp;" in line and "&#10;" in line
    assert "status" not in line


def test_compact_line_shortens_long_values_to_80_characters():
    line = compact_line("shell", {"command": "x" * 500})
    value = line.split("command=")[1].removesuffix("/>").strip('"')
    assert len(value) == 80 and value.endswith("…")


def test_compact_line_for_an_unknown_tool_names_it_only():
    assert compact_line("browse", {"url": "x"}, "error") == '<tool name="browse" status="error"/>'


def test_the_tools_take_where_they_run_and_whether_sub_agents_see_them_from_the_task_contract():
    """The workflow reads these declarations as data (it may not import the tools); each names
    a tool, so a renamed tool cannot drop out of them unnoticed."""
    from core.tool_args import CHILD_WORKFLOW_TOOLS, NOT_FOR_SUBAGENTS

    assert set(CHILD_WORKFLOW_TOOLS) | set(NOT_FOR_SUBAGENTS) <= set(REGISTRY)
    assert [n for n, t in REGISTRY.items() if t.runs_in == "child_workflow"] == ["spawn"]
    assert sorted(n for n, t in REGISTRY.items() if not t.for_subagents) == ["load_skill", "memory"]


def test_a_tool_summarizes_its_call_by_its_declared_keys_without_file_contents():
    assert REGISTRY["shell"].summarize({"command": "ls -la", "timeout_s": 5}) == "ls -la"
    assert REGISTRY["file"].summarize({"action": "write", "path": "a.txt", "content": "x" * 50}) == "write a.txt"


@pytest.mark.parametrize(("name", "arguments", "where"), [
    ("file", {"action": "read", "path": "a.txt"}, "local_activity"),
    ("file", {"action": "list", "path": "."}, "local_activity"),
    ("file", {"action": "grep", "path": ".", "pattern": "x"}, "activity"),  # may walk a large tree
    ("file", {"action": "write", "path": "a.txt", "content": "x"}, "activity"),  # changes the workspace
    ("file", {"action": "delete", "path": "a"}, "activity"),  # invalid: the ordinary activity answers it
    ("message", {"type": "result", "text": "done"}, "local_activity"),
    ("plan", {"items": []}, "local_activity"),
    ("shell", {"command": "ls"}, "activity"),  # a command may run for an hour
    ("spawn", {"task": "look"}, "child_workflow"),
    ("no_such_tool", {}, "activity"),
])
def test_where_a_call_runs_is_the_tools_declaration(name, arguments, where):
    assert runs_in(name, arguments) == where


def test_arguments_validated_once_per_call_are_validated_again_when_they_change(monkeypatch):
    """A call's arguments are validated once for its classification, placement, gate and
    run; arguments changed since (the same dict, another command) are validated afresh."""
    validations = []
    original = registry.coerce_args
    monkeypatch.setattr(registry, "coerce_args", lambda schema, args: validations.append(1) or original(schema, args))
    arguments = {"command": "ls"}
    assert registry.classify_call("shell", arguments)[0] is Danger.SAFE
    registry.is_idempotent("shell", arguments)
    registry.classify_call("shell", arguments)
    assert len(validations) == 1
    arguments["command"] = "rm -rf /"
    assert registry.classify_call("shell", arguments)[0] is Danger.DANGEROUS
    assert len(validations) == 2
    # An equal dict that is another object is validated on its own.
    assert registry.classify_call("shell", {"command": "rm -rf /"})[0] is Danger.DANGEROUS
    assert len(validations) == 3


def call(name: str, **arguments) -> ToolCallRequest:
    return ToolCallRequest(id="c1", name=name, arguments=arguments)


def test_declare_records_the_danger_placement_and_summary_the_tool_declares(tmp_path):
    declared = declare(call("shell", command="rm -rf build"), ["shell", "file"], tmp_path)
    assert (declared.danger, declared.runs_in, declared.not_offered) == ("dangerous", "activity", None)
    assert declared.danger_reason and declared.summary == REGISTRY["shell"].summarize({"command": "rm -rf build"})
    read = declare(call("file", action="read", path="a.txt"), ["shell", "file"])
    assert (read.danger, read.danger_reason, read.runs_in) == ("safe", None, "local_activity")


def test_declare_places_local_reads_in_the_activity_when_local_tools_are_off():
    declared = declare(call("file", action="read", path="a.txt"), ["file"], local_tools=False)
    assert declared.runs_in == "activity"


def test_declare_passes_the_reason_through_redact():
    declared = declare(call("shell", command="rm -rf build"), ["shell"], redact=lambda text: "[redacted]")
    assert declared.danger_reason == "[redacted]"


def test_declare_answers_a_tool_the_task_was_not_offered_and_classifies_nothing():
    original = call("shell", command="rm -rf /")
    declared = declare(original, ["message", "file"])
    assert declared.not_offered == "Unknown tool 'shell': this task has no such tool. Available tools: message, file."
    assert (declared.danger, declared.danger_reason, declared.summary) == ("safe", None, None)
    assert original.not_offered is None  # the call given is left as it was


@dataclass
class Listed:
    danger: str = "dangerous"
    reason: str = "the server says it deletes"
    read_only: bool = False


def test_declare_takes_an_mcp_tools_danger_from_its_listing():
    name = "mcp__files__delete"
    declared = declare(call(name, path="a", force=True), [name], listed={name: Listed()})
    assert (declared.danger, declared.danger_reason) == ("dangerous", "the server says it deletes")
    assert (declared.runs_in, declared.summary) == ("activity", "a True")


def test_declare_records_which_calls_only_read_and_which_may_run_in_parallel():
    offered = ["file", "shell", "message", "load_skill", "view", "visit"]
    declared = {label: declare(c, offered) for label, c in {
        "read": call("file", action="read", path="a.txt"), "grep": call("file", action="grep", pattern="x"),
        "write": call("file", action="write", path="a.txt", content="A"), "shell": call("shell", command="ls"),
        "shell write": call("shell", command="ls > out.txt"),
        "result": call("message", type="result", text="done"), "skill": ToolCallRequest(id="c1", name="load_skill", arguments={"name": "pdf"}),
        "view": call("view"), "view tab": call("view", tab=1), "visit": call("visit", url="https://a.example"),
        "bad read": call("file", action="read", path="a.txt", colour="red"),
    }.items()}
    assert {k: (d.read_only, d.parallel) for k, d in declared.items()} == {
        "read": (True, True), "grep": (True, True), "write": (False, False), "shell": (True, False),
        "shell write": (False, False),
        "result": (True, False), "skill": (True, True), "view": (True, True), "view tab": (True, False),
        "visit": (True, False), "bad read": (False, False),
    }
    assert "read_only" not in declared["write"].model_dump_json()  # a call that changes things costs no bytes


def test_declare_runs_an_mcp_tool_annotated_read_only_in_parallel():
    name = "mcp__files__read"
    declared = declare(call(name, path="a"), [name], listed={name: Listed(danger="safe", reason="", read_only=True)})
    assert (declared.read_only, declared.parallel) == (True, True)
