"""Issue 29's shape of the house, held by CI: one turn's path through no more engine files than
today (computed from the code's imports, issue 41, so one module added to it fails here), at
most 10 source files over 300 lines, none on that path but the one known."""

from __future__ import annotations

from pathlib import Path

from benchmarks.house import KNOWN_LONG_ON_PATH, TURN_PATH_FILES, count, turn_files


def test_one_turn_goes_through_no_more_files_than_today_and_none_of_them_is_long():
    house = count()
    assert "workflows/task.py" in house.turn_files and "activities/tools.py" in house.turn_files
    assert len(house.turn_files) <= TURN_PATH_FILES, house.turn_files
    long = {name for name, _ in house.long_files}
    assert len(long) <= 10, sorted(long)
    assert long & set(house.turn_files) <= KNOWN_LONG_ON_PATH, sorted(long & set(house.turn_files))


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_module_imported_on_the_turns_path_is_counted_at_any_depth(tmp_path):
    root = _tree(tmp_path, {
        "workflows/__init__.py": "", "activities/__init__.py": "", "providers/openai.py": "",
        "workflows/task.py": "from workflows import engine\nfrom . import policy\n",
        "workflows/engine.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from workflows import typing_only\n",
        "workflows/policy.py": "", "workflows/typing_only.py": "", "workflows/unused.py": "",
        "activities/llm.py": "import providers.openai\n", "activities/tools.py": "def f():\n    from activities import lazy\n",
        "activities/lazy.py": "",
    })  # fmt: skip
    before = turn_files(root)
    assert before == ["activities/lazy.py", "activities/llm.py", "activities/tools.py", "workflows/engine.py",
                      "workflows/policy.py", "workflows/task.py"]
    (root / "workflows/policy.py").write_text("from workflows.unused import x\n")  # one module more on the path
    assert turn_files(root) == sorted([*before, "workflows/unused.py"])
