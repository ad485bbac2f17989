from datetime import datetime
from pathlib import Path

import pytest

from contracts.toolset import DEFAULT_TOOLS
from core.settings import PromptSettings
from prompts import build_system_prompt, load_prompt_context
from tests import configured
from tools import REGISTRY, classify_call, compact_line, execute, memory
from tools.base import Danger, ToolOutcome
from tools.memory import HEADER, MAX_FACT_CHARS, MAX_MEMORY_CHARS


async def _memory(ws: Path, **arguments) -> ToolOutcome:
    return await execute("memory", arguments, configured.tool_context(workspace=ws))


def _facts(ws: Path) -> list[str]:
    return [line for line in (ws / "MEMORY.md").read_text().splitlines() if line.startswith("- ")]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "now", lambda: datetime(2025, 3, 14, 9, 26, 53))


# --- append -----------------------------------------------------------------


async def test_memory_append_creates_memory_md_with_a_header_and_the_fact(workspace):
    result = await _memory(workspace, action="append", fact="  The user prefers uv over pip.  ")
    assert result.status == "ok"
    assert (workspace / "MEMORY.md").read_text() == HEADER + "- The user prefers uv over pip.\n"


async def test_memory_append_adds_to_the_end_of_an_existing_file(workspace):
    (workspace / "MEMORY.md").write_text("# Mine\n- first fact")  # no final newline
    await _memory(workspace, action="append", fact="second fact")
    assert (workspace / "MEMORY.md").read_text() == "# Mine\n- first fact\n- second fact\n"


async def test_memory_append_ignores_a_duplicate_fact(workspace):
    await _memory(workspace, action="append", fact="Tests run with make test.")
    result = await _memory(workspace, action="append", fact="tests run  with MAKE test.")
    assert result.status == "ok" and "Already in MEMORY.md" in result.content
    assert _facts(workspace) == ["- Tests run with make test."]


@pytest.mark.parametrize("fact", ["first line\nsecond line", "one\r\ntwo", "para\u2028graph"])
async def test_memory_refuses_a_multi_line_fact(workspace, fact):
    result = await _memory(workspace, action="append", fact=fact)
    assert result.status == "retry" and "single line" in result.content
    assert not (workspace / "MEMORY.md").exists()


async def test_memory_refuses_a_fact_over_the_length_limit(workspace):
    result = await _memory(workspace, action="append", fact="x" * (MAX_FACT_CHARS + 1))
    assert result.status == "retry" and f"at most {MAX_FACT_CHARS} characters" in result.content
    ok = await _memory(workspace, action="append", fact="x" * MAX_FACT_CHARS)
    assert ok.status == "ok"


@pytest.mark.parametrize(
    "arguments, needed",
    [({"action": "append"}, "needs fact"), ({"action": "revise", "old": "a"}, "needs new"),
     ({"action": "note"}, "needs note"), ({"action": "append", "fact": "   "}, "must not be empty")],
)
async def test_memory_asks_for_the_fields_its_action_needs(workspace, arguments, needed):
    result = await _memory(workspace, **arguments)
    assert result.status == "retry" and needed in result.content


async def test_memory_append_refuses_to_grow_past_the_cap(workspace):
    (workspace / "MEMORY.md").write_text("- " + "x" * (MAX_MEMORY_CHARS - 10) + "\n")
    result = await _memory(workspace, action="append", fact="one fact too many")
    assert result.status == "error" and "is full" in result.content
    assert "one fact too many" not in (workspace / "MEMORY.md").read_text()


async def test_memory_refuses_to_write_through_a_symlink(workspace, tmp_path):
    target = tmp_path / "outside.md"
    target.write_text("untouched\n")
    (workspace / "MEMORY.md").symlink_to(target)
    result = await _memory(workspace, action="append", fact="sneaky")
    assert result.status == "error" and "symlink" in result.content
    assert target.read_text() == "untouched\n"


async def test_memory_refuses_to_rewrite_a_memory_md_that_is_not_utf8(workspace):
    (workspace / "MEMORY.md").write_bytes(b"- caf\xe9\n")
    result = await _memory(workspace, action="append", fact="new")
    assert result.status == "error" and "not UTF-8" in result.content
    assert (workspace / "MEMORY.md").read_bytes() == b"- caf\xe9\n"


# --- revise -----------------------------------------------------------------


async def test_memory_revise_replaces_the_fact_line_in_place(workspace):
    for fact in ("Deploys go through CI.", "Tests run with make test.", "The user is Ada."):
        await _memory(workspace, action="append", fact=fact)
    result = await _memory(workspace, action="revise", old="- Tests run with make test.", new="Tests run with tox.")
    assert result.status == "ok"
    assert _facts(workspace) == ["- Deploys go through CI.", "- Tests run with tox.", "- The user is Ada."]


async def test_memory_revise_with_an_empty_new_removes_the_fact(workspace):
    await _memory(workspace, action="append", fact="Outdated.")
    await _memory(workspace, action="append", fact="Current.")
    result = await _memory(workspace, action="revise", old="Outdated.", new="")
    assert result.status == "ok" and "Removed" in result.content
    assert _facts(workspace) == ["- Current."]


async def test_memory_revise_into_an_existing_fact_leaves_one_copy(workspace):
    await _memory(workspace, action="append", fact="A.")
    await _memory(workspace, action="append", fact="B.")
    await _memory(workspace, action="revise", old="A.", new="B.")
    assert _facts(workspace) == ["- B."]


async def test_memory_revise_of_a_missing_fact_is_an_error_listing_the_facts(workspace):
    await _memory(workspace, action="append", fact="Tests run with make test.")
    result = await _memory(workspace, action="revise", old="Tests run with pytest.", new="x")
    assert result.status == "error"
    assert "no fact in MEMORY.md equals old" in result.content
    assert "- Tests run with make test." in result.content
    assert _facts(workspace) == ["- Tests run with make test."]


async def test_memory_revise_without_memory_md_is_an_error(workspace):
    result = await _memory(workspace, action="revise", old="a", new="b")
    assert result.status == "error" and "does not exist" in result.content
    assert not (workspace / "MEMORY.md").exists()


# --- notes and read -------------------------------------------------------------


async def test_memory_note_appends_a_timestamped_line_to_todays_file(workspace, clock):
    first = await _memory(workspace, action="note", note="Migrated the config to TOML.")
    await _memory(workspace, action="note", note="Tests green after the migration.")
    assert first.status == "ok" and "memory/2025-03-14.md" in first.content
    assert (workspace / "memory" / "2025-03-14.md").read_text() == (
        "# Notes 2025-03-14\n\n"
        "- 09:26:53 Migrated the config to TOML.\n"
        "- 09:26:53 Tests green after the migration.\n"
    )
    assert not (workspace / "MEMORY.md").exists()


async def test_memory_note_refuses_a_notes_dir_that_is_a_symlink(workspace, tmp_path, clock):
    (tmp_path / "elsewhere").mkdir()
    (workspace / "memory").symlink_to(tmp_path / "elsewhere")
    result = await _memory(workspace, action="note", note="x")
    assert result.status == "error" and list((tmp_path / "elsewhere").iterdir()) == []


async def test_memory_read_returns_the_facts_and_the_recent_notes(workspace, clock):
    await _memory(workspace, action="append", fact="The user is Ada.")
    await _memory(workspace, action="note", note="Did things.")
    result = await _memory(workspace, action="read")
    assert result.status == "ok"
    assert "- The user is Ada." in result.content and "memory/2025-03-14.md" in result.content


async def test_memory_read_without_memory_md_says_it_is_empty(workspace):
    result = await _memory(workspace, action="read")
    assert result.status == "ok" and "no facts yet" in result.content


# --- policy and prompt ------------------------------------------------------------


def test_memory_is_registered_moderate_except_read_and_not_a_default_tool():
    assert REGISTRY["memory"] is memory.TOOL and "memory" in DEFAULT_TOOLS
    assert classify_call("memory", {"action": "append", "fact": "x"})[0] is Danger.MODERATE
    assert classify_call("memory", {"action": "read"})[0] is Danger.SAFE
    assert compact_line("memory", {"action": "append", "fact": "x"}) == '<tool name="memory" action="append"/>'


async def test_a_remembered_fact_is_in_the_next_system_prompt(workspace, tmp_path):
    await _memory(workspace, action="append", fact="The staging host is stg-01.")
    context = load_prompt_context(workspace, data_dir=tmp_path / "data", session=None, skills_dirs=[],
                                  settings=PromptSettings())
    system = build_system_prompt(workspace=str(workspace), date="2025-03-14", tool_names=["memory"], context=context)
    assert "- The staging host is stg-01." in system.dynamic.split("<memory>")[1]
