"""How easy the house is to live in, counted: the engine files one turn goes through (the
import closure of the task loop, the LLM activity and the tool activity within the engine's
layers, computed from the code), the source files over 300 lines, the reads of the
environment outside the settings and the entry points, and the settings read anywhere else
(a service that builds its own settings when given none, instead of being handed them).

    python -m benchmarks.house

Issue 29's targets: no more files on the turn's path than ``TURN_PATH_FILES`` (issue 41: a
module added to the path is seen), at most 10 long files and none of
them on that path, no environment read outside ``ENV_READERS``, no settings read outside
``SETTINGS_READERS``.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG_LINES = 300
# Trees that are not the product's source: long files there do not count.
NOT_SOURCE = ("tests", "benchmarks", "fakes", "evals", ".venv", "data", "build")
# Where reading the environment belongs: the settings and the entry points.
# tools/egress_bridge.py is a program of its own, run inside the sandbox by the worker's interpreter.
ENV_READERS = ("runtime/settings.py", "worker.py", "starter.py", "tools/egress_bridge.py")
# Where the settings are built: their groups, the one reader, and the entry points that call it
# (evals and benchmarks included in the count: evals is run by the CLI, which hands it its own).
SETTINGS_READERS = ("core/settings.py", "runtime/settings.py", "worker.py", "starter.py", "temporal/codec_server.py")
_SETTINGS_READ = re.compile(r"\bfrom_process\b|\.from_env\(|\bload_settings\(")
# Where one turn starts: the task loop, the LLM activity and the tool activity; and the layers
# it walks through, whose imports are followed (a provider or a tool is one plug-in among
# several, reached through the factory or the registry, and its own imports are its own).
TURN_ROOTS = ("workflows.task", "activities.llm", "activities.tools")
TURN_LAYERS = ("workflows", "activities")
TURN_PATH_FILES = 24  # today's path: one module more fails tests/test_house.py
# Long files on the path today, to split (issue 41 found it: MCP's connections, 329 lines).
KNOWN_LONG_ON_PATH = frozenset({"activities/mcp_sessions.py"})
_ENV_READ = re.compile(r"os\.environ\b|os\.getenv\(|getenv\(")


@dataclass(frozen=True)
class House:
    turn_files: list[str]
    long_files: list[tuple[str, int]]
    env_reads: list[str]  # "path:line"
    settings_reads: list[str]  # "path:line"


def sources(root: Path = ROOT) -> list[Path]:
    return sorted(p for p in root.rglob("*.py")
                  if not any(part in NOT_SOURCE or part.startswith(".") for part in p.relative_to(root).parts[:-1]))


def turn_files(root: Path = ROOT) -> list[str]:
    """The modules one turn goes through: ``TURN_ROOTS`` and every module of ``TURN_LAYERS``
    they import, at any depth (lazy imports included; ``if TYPE_CHECKING:`` ones not), as paths;
    empty package files do not count."""
    seen: set[Path] = set()
    todo = list(TURN_ROOTS)
    while todo:
        path = _module_file(root, todo.pop())
        if path is None or path in seen:
            continue
        seen.add(path)
        todo += [name for name in _imports(path, root) if name.split(".")[0] in TURN_LAYERS]
    return sorted(p.relative_to(root).as_posix() for p in seen
                  if p.name != "__init__.py" or p.read_text(encoding="utf-8").strip())


def _module_file(root: Path, name: str) -> Path | None:
    base = root.joinpath(*name.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def _imports(path: Path, root: Path) -> set[str]:
    """The modules ``path`` imports: ``from a import b`` names both ``a`` and ``a.b``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
               for n in ast.walk(node)}
    package = path.relative_to(root).parent.parts
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join([*package[:len(package) - node.level + 1], *[node.module or ""]]) if node.level else node.module
            base = (base or "").strip(".")
            names |= {base, *(f"{base}.{alias.name}" for alias in node.names)}
    return names


def count(root: Path = ROOT) -> House:
    long_files, env_reads = [], []
    for path in sources(root):
        name = path.relative_to(root).as_posix()
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > LONG_LINES:
            long_files.append((name, len(lines)))
        if name not in ENV_READERS:
            env_reads += [f"{name}:{i}" for i, line in enumerate(lines, 1) if _ENV_READ.search(line)]
    return House(turn_files(root), sorted(long_files, key=lambda f: -f[1]), env_reads, settings_reads(root))


def settings_reads(root: Path = ROOT) -> list[str]:
    """Where settings are built outside ``SETTINGS_READERS`` (the sources and evals/)."""
    found = []
    for path in [*sources(root), *sorted((root / "evals").rglob("*.py"))]:
        name = path.relative_to(root).as_posix()
        if name not in SETTINGS_READERS:
            lines = path.read_text(encoding="utf-8").splitlines()
            found += [f"{name}:{i}" for i, line in enumerate(lines, 1) if _SETTINGS_READ.search(line)]
    return found


def main() -> int:
    house = count()
    on_path = set(house.turn_files)
    print(f"files on one turn's path: {len(house.turn_files)}  [target <= {TURN_PATH_FILES}]")
    print(f"  {', '.join(house.turn_files)}")
    print(f"source files over {LONG_LINES} lines: {len(house.long_files)}  [target <= 10, none on the path]")
    for name, lines in house.long_files:
        print(f"  {lines:5d}  {name}{'  (on the path)' if name in on_path else ''}")
    print(f"environment reads outside {', '.join(ENV_READERS)}: {len(house.env_reads)}  [target 0]")
    modules = sorted({read.split(':')[0] for read in house.env_reads})
    print(f"  in {len(modules)} modules: {', '.join(modules)}")
    print(f"settings read outside {', '.join(SETTINGS_READERS)}: {len(house.settings_reads)}  [target 0]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
