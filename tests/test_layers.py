"""Imports point one way: each layer may import only the layers below it, never a sibling;
and inside a layer, files import each other in at most ``MAX_CIRCLES`` circles.

A short AST check over every import statement in the project, lazy ones inside functions
and those under TYPE_CHECKING included: moving an import there hides a dependency from
Python, not from a reader (import-linter checks packages only, and ``starter``/``worker``
are modules). The picture is in docs/turn.md.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Top to bottom; names in one row are siblings that may not import each other.
LAYERS: list[tuple[str, ...]] = [
    ("starter",),
    ("cli", "benchmarks"),
    ("evals",),
    ("worker",),
    ("activities", "channels"),  # channels/: the adapters, and the gateway that runs them (a worker)
    ("prompts", "temporal", "workflows"),
    ("contracts", "providers", "tools", "runtime", "fakes"),
    ("core",),
]
LEVEL = {name: depth for depth, row in enumerate(LAYERS) for name in row}


def _sources(root: Path) -> list[Path]:
    files = []
    for name in LEVEL:
        if (root / f"{name}.py").is_file():
            files.append(root / f"{name}.py")
        elif (root / name).is_dir():
            files.extend(sorted((root / name).rglob("*.py")))
    return files


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in ``tree``, wherever it sits; ``from a.b import c``
    names a.b.c (a module, or a name in a.b)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def package_edges(root: Path) -> dict[tuple[str, str], list[str]]:
    """(importer, imported) top-level names -> where, for imports between project parts."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in _sources(root):
        rel = path.relative_to(root)
        owner = rel.parts[0].removesuffix(".py")
        for line, module in _imported(ast.parse(path.read_text(encoding="utf-8"))):
            target = module.split(".")[0]
            if target in LEVEL and target != owner:
                edges.setdefault((owner, target), []).append(f"{rel}:{line} imports {module}")
    return edges


def violations(root: Path) -> list[str]:
    return [
        where
        for (owner, target), places in package_edges(root).items()
        if LEVEL[target] <= LEVEL[owner]
        for where in places
    ]


def test_every_import_points_down_the_layers():
    assert violations(ROOT) == []


def test_there_are_no_cycles_between_packages():
    edges = {pair for pair in package_edges(ROOT)}
    assert not [(a, b) for a, b in edges if (b, a) in edges]  # any cycle has a wrong-way edge, so this is the short form
    assert violations(ROOT) == []


def test_a_wrong_way_import_is_caught(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", "data", "__pycache__"))
    assert violations(copy) == []
    target = copy / "core" / "messages.py"
    target.write_text(target.read_text() + "\n\ndef _late():\n    from activities.llm import LlmActivities\n")
    sibling = copy / "providers" / "errors.py"
    sibling.write_text("import tools.registry\n" + sibling.read_text())
    found = violations(copy)
    assert any("core/messages.py" in v and "activities.llm" in v for v in found)
    assert any("providers/errors.py:1" in v and "tools.registry" in v for v in found)


# The one left: tools/browser/page.py's Watch reads the task's tabs (tools/browser/tabs.py), which
# take their timeouts from page.py.
MAX_CIRCLES = 1


def _module(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph(root: Path) -> dict[str, set[str]]:
    """Each project module -> the project modules it imports. ``from a.b import c`` is a.b.c
    when that is a module, else a.b (the most specific module named; a package's __init__
    is not counted as imported by whoever imports one of its modules)."""
    paths = {_module(root, path): path for path in _sources(root)}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        graph[name] = set()
        for _, target in _imported(ast.parse(path.read_text(encoding="utf-8"))):
            while target and target not in paths:
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].add(target)
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        if (node := todo.pop()) not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import each other, directly or around a loop: each circle once, as
    the sorted names of the modules on it (a strongly connected component of two or more)."""
    reach = {node: _reachable(graph, node) for node in graph}
    found = {frozenset({node, *(other for other in reach[node] if node in reach.get(other, ()))})
             for node in graph if node in reach[node]}
    return sorted(sorted(circle) for circle in found)


def test_the_house_has_at_most_one_file_level_import_circle():
    found = circles(module_graph(ROOT))
    assert len(found) <= MAX_CIRCLES, f"modules that import each other (move what both need to a third): {found}"


def test_the_circle_finder_finds_each_circle_once_and_nothing_else():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(), "f": {"g"}, "g": {"f", "e"}, "h": {"a"}}
    assert circles(graph) == [["a", "b", "c"], ["f", "g"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_an_added_circle_is_caught_however_the_import_is_hidden(tmp_path):
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "first.py").write_text("from core import second\n")
    (tmp_path / "core" / "second.py").write_text("def late():\n    from core.third import X\n")
    (tmp_path / "core" / "third.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from core.first import Y\nimport core.alone\n")
    (tmp_path / "core" / "alone.py").write_text("import json\n")
    assert circles(module_graph(tmp_path)) == [["core.first", "core.second", "core.third"]]


def test_the_workflow_imports_no_io_library_and_no_tool():
    # asyncio itself imports subprocess, so the check is on what would use it: the tools,
    # providers, runtime services and activities, and the HTTP client.
    probe = (
        "import sys, workflows.task\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('httpx', 'httpx_sse', 'providers', 'tools', 'runtime', 'activities', 'temporal', 'prompts'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
