"""Imports point one way: each layer may import only the layers below it, never a sibling.

A short AST check over every import statement in the project, lazy ones inside functions
included (import-linter checks packages only, and ``starter``/``worker`` are modules).
The picture is in docs/turn.md.
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
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
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
