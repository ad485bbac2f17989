"""Issue 29's shape of the house, held by CI: one turn's path through no more engine files than
today (computed from the code's imports, issue 41, so one module added to it fails here), at
most 10 source files over 300 lines, none on that path but the one known. And issue 41's
honest tests: at most 12 fixed sleeps outside polling loops, each saying what it waits for;
no skip in the sandbox's tests that CI's ``AGENT_TEST_REQUIRE_*`` cannot turn into a failure."""

from __future__ import annotations

import ast
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


TESTS = Path(__file__).resolve().parent
MAX_FIXED_SLEEPS = 12  # issue 41: down from 21, each with a comment saying what it waits for
FIXED_SLEEP_S = 0.2


def fixed_sleeps(root: Path = TESTS) -> list[str]:
    """``asyncio.sleep(x)`` / ``time.sleep(x)`` with a literal ``x`` of ``FIXED_SLEEP_S`` or
    more outside any loop's body, as ``path:line``: a wait on time, not on something seen (a
    loop's sleep is a poll's)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        looped = {id(n) for loop in ast.walk(tree) if isinstance(loop, ast.While | ast.For | ast.AsyncFor)
                  for n in ast.walk(loop)}
        found += [f"{path.relative_to(root.parent)}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and id(node) not in looped and ast.unparse(node.func).endswith("sleep")
                  and node.args and isinstance(node.args[0], ast.Constant)
                  and isinstance(node.args[0].value, int | float) and node.args[0].value >= FIXED_SLEEP_S]
    return found


def test_at_most_12_fixed_sleeps_outside_loops_each_saying_what_it_waits_for():
    sleeps = fixed_sleeps()
    assert len(sleeps) <= MAX_FIXED_SLEEPS, sleeps
    lines = {name: (TESTS.parent / name).read_text(encoding="utf-8").splitlines()
             for name in {s.split(":")[0] for s in sleeps}}
    silent = [s for s in sleeps if "#" not in lines[s.split(":")[0]][int(s.split(":")[1]) - 1]]
    assert not silent, f"say what each waits for, in a comment on its line: {silent}"


def unguarded_skips(root: Path = TESTS) -> list[str]:
    """Skips in the sandbox's tests (tests/security, tests/tools) that ``AGENT_TEST_REQUIRE_*``
    cannot turn into failures: ``pytest.skip`` or a ``skipif`` mark called in the test file
    itself, where the guarded helpers (``tests/sandboxing.py``, ``tests/browsing.py``) are not."""
    found = []
    for folder in ("security", "tools"):
        for path in sorted((root / folder).rglob("*.py")):
            called: set[int] = set()  # a call's own name is not counted again as a bare mark
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    called.add(id(node.func))
                    name = ast.unparse(node.func)
                else:
                    name = ast.unparse(node) if isinstance(node, ast.Attribute) and id(node) not in called else ""
                if name in ("pytest.skip", "pytest.importorskip", "pytest.mark.skipif", "pytest.mark.skip"):
                    found.append(f"{path.relative_to(root.parent)}:{getattr(node, 'lineno', 0)}")
    return found


def test_no_skip_in_the_sandbox_tests_escapes_the_require_variables():
    assert unguarded_skips() == []
