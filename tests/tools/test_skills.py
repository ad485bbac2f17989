from pathlib import Path

import pytest

from contracts.toolset import DEFAULT_TOOLS
from core.settings import SkillSettings
from tests import configured
from tools import REGISTRY, classify_call, compact_line, execute, skills
from tools.base import Danger
from tools.skills import (
    MAX_SKILL_FILE_CHARS,
    REPO_SKILLS,
    WORKSPACE_SKILLS,
    discover_skills,
    parse_front_matter,
    skills_dirs,
)


def _skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(text)
    return path


def _good(name: str, description: str = "Use when testing. Not for production.", body: str = "Body.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


@pytest.fixture
def ws(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("AGENT_SKILLS_DIRS", raising=False)  # the tool contexts the test builds: none
    return workspace


def _ws_skills(ws: Path) -> Path:
    return ws / WORKSPACE_SKILLS


# --- front matter and discovery ---------------------------------------------


def test_parse_front_matter_reads_key_value_lines_and_returns_the_body():
    meta, body = parse_front_matter("---\nname: a\ndescription: 'Use when x: y.'\n# a comment\n---\n\n# Title\n")
    assert meta == {"name": "a", "description": "Use when x: y."}
    assert body == "# Title\n"


def test_discover_skills_finds_skill_folders_sorted_by_name(tmp_path):
    _skill(tmp_path, "zeta", _good("zeta"))
    _skill(tmp_path, "alpha", _good("alpha", "Use when starting."))
    (tmp_path / "not-a-skill").mkdir()
    (tmp_path / "README.md").write_text("loose file")
    found = discover_skills([tmp_path])
    assert [s.name for s in found] == ["alpha", "zeta"]
    assert found[0].description == "Use when starting."
    assert found[0].path == (tmp_path / "alpha").resolve()


@pytest.mark.parametrize(
    "text",
    [
        "name: x\ndescription: no front matter\n",
        "---\nname: x\ndescription: never closed\n",
        "---\nname: x\n---\nno description\n",
        "---\ndescription: no name\n---\n",
        "---\nname: x\ndescription: |\n  Use when a YAML block is used.\n---\n",
        "---\nname: x\ndescription: Use when\n  continued on an indented line.\n---\n",
        "---\nname: x\ndescription: Use when ok.\njust a line without a colon\n---\n",
        "---\nname: ../escape\ndescription: Use when the name is a path.\n---\n",
    ],
)
def test_discover_skills_skips_malformed_front_matter(tmp_path, text):
    _skill(tmp_path, "bad", text)
    _skill(tmp_path, "good", _good("good"))
    assert [s.name for s in discover_skills([tmp_path])] == ["good"]


def test_discover_skills_keeps_the_first_dir_when_names_collide(tmp_path):
    _skill(tmp_path / "first", "one", _good("shared", "Use when first."))
    _skill(tmp_path / "second", "two", _good("shared", "Use when second."))
    _skill(tmp_path / "second", "other", _good("other"))
    found = discover_skills([tmp_path / "missing", tmp_path / "first", tmp_path / "second"])
    assert [(s.name, s.description) for s in found] == [("other", "Use when testing. Not for production."),
                                                       ("shared", "Use when first.")]


def test_discover_skills_skips_a_skill_folder_symlinked_out_of_its_dir(tmp_path):
    outside = _skill(tmp_path / "elsewhere", "sneaky", _good("sneaky"))
    (tmp_path / "skills").mkdir()
    (tmp_path / "skills" / "sneaky").symlink_to(outside)
    assert discover_skills([tmp_path / "skills"]) == []


def test_discover_skills_cuts_an_overlong_description(tmp_path):
    _skill(tmp_path, "long", _good("long", "Use when " + "x" * 1000))
    (skill,) = discover_skills([tmp_path])
    assert len(skill.description) == skills.MAX_DESCRIPTION_CHARS and skill.description.endswith("…")


def test_skills_dirs_are_the_workspace_then_the_env_then_the_repository(tmp_path):
    env = {"AGENT_SKILLS_DIRS": f"{tmp_path / 'a'}{__import__('os').pathsep}{tmp_path / 'b'}"}
    assert skills_dirs(tmp_path / "ws", SkillSettings.from_env(env).dirs) == [
        tmp_path / "ws" / ".agent" / "skills", tmp_path / "a", tmp_path / "b", REPO_SKILLS,
    ]
    assert skills_dirs(tmp_path / "ws", extra=()) == [tmp_path / "ws" / ".agent" / "skills", REPO_SKILLS]


def test_repository_skills_are_well_formed_routing_conditions():
    found = {s.name: s for s in discover_skills([REPO_SKILLS])}
    assert {"python-testing", "git-commit"} <= set(found)
    for skill in found.values():
        assert skill.description.startswith("Use when") and "Not " in skill.description


# --- the load_skill tool ----------------------------------------------------


async def test_load_skill_returns_the_body_without_front_matter_and_lists_other_files(ws):
    folder = _skill(_ws_skills(ws), "deploy", _good("deploy", body="# Deploy\nRun `make release`.\n"))
    (folder / "scripts").mkdir()
    (folder / "scripts" / "check.sh").write_text("echo ok")
    (folder / "reference.md").write_text("details")
    result = await execute("load_skill", {"name": "deploy"}, configured.tool_context(workspace=ws))
    assert result.status == "ok"
    assert '<skill name="deploy">\n# Deploy\nRun `make release`.\n</skill>' in result.content
    assert "description:" not in result.content and "---" not in result.content
    assert "- reference.md\n- scripts/check.sh" in result.content
    assert "SKILL.md" not in result.content.split("</skill>")[1]


async def test_load_skill_finds_the_repository_skills(ws):
    result = await execute("load_skill", {"name": "python-testing"}, configured.tool_context(workspace=ws))
    assert result.status == "ok" and "python -m pytest" in result.content


async def test_load_skill_of_an_unknown_name_is_an_error_listing_the_available_skills(ws):
    _skill(_ws_skills(ws), "deploy", _good("deploy"))
    result = await execute("load_skill", {"name": "deplyo"}, configured.tool_context(workspace=ws))
    assert result.status == "error"
    assert "Unknown skill 'deplyo'" in result.content
    assert "deploy" in result.content and "git-commit" in result.content


async def test_load_skill_reads_a_supporting_file_but_nothing_outside_the_skill(ws):
    folder = _skill(_ws_skills(ws), "deploy", _good("deploy"))
    (folder / "reference.md").write_text("the long reference")
    (ws / "private.txt").write_text("not part of the skill")
    ctx = configured.tool_context(workspace=ws)
    ok = await execute("load_skill", {"name": "deploy", "file": "reference.md"}, ctx)
    assert (ok.status, ok.content) == ("ok", "the long reference")
    escape = await execute("load_skill", {"name": "deploy", "file": "../../../private.txt"}, ctx)
    assert escape.status == "error" and "not part of" not in escape.content
    missing = await execute("load_skill", {"name": "deploy", "file": "nope.md"}, ctx)
    assert missing.status == "error" and "reference.md" in missing.content


async def test_load_skill_cuts_a_very_long_skill_with_a_note(ws):
    _skill(_ws_skills(ws), "huge", _good("huge", body="y" * (MAX_SKILL_FILE_CHARS * 2)))
    result = await execute("load_skill", {"name": "huge"}, configured.tool_context(workspace=ws))
    assert result.status == "ok"
    assert f"[SKILL.md cut at {MAX_SKILL_FILE_CHARS} characters" in result.content
    assert len(result.content) < MAX_SKILL_FILE_CHARS + 1000


def test_load_skill_is_registered_safe_and_not_a_default_tool():
    assert REGISTRY["load_skill"] is skills.TOOL and "load_skill" in DEFAULT_TOOLS
    assert classify_call("load_skill", {"name": "x"})[0] is Danger.SAFE
    assert 'name="deploy"' in compact_line("load_skill", {"name": "deploy"})
