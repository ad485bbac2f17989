"""How easy the house is to live in, counted: the engine files one turn goes through (as
``docs/turn.md`` names them), the source files over 300 lines, the reads of the
environment outside the settings and the entry points, and the settings read anywhere else
(a service that builds its own settings when given none, instead of being handed them).

    python -m benchmarks.house

Issue 29's targets: at most 15 files on the turn's path, at most 10 long files and none of
them on that path, no environment read outside ``ENV_READERS``, no settings read outside
``SETTINGS_READERS``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG_LINES = 300
# Trees that are not the product's source: long files there do not count.
NOT_SOURCE = ("tests", "benchmarks", "fakes", "evals", ".venv", "data", "build")
# Where reading the environment belongs: the settings and the entry points.
ENV_READERS = ("runtime/settings.py", "worker.py", "starter.py")
# Where the settings are built: their groups, the one reader, and the entry points that call it
# (evals and benchmarks included in the count: evals is run by the CLI, which hands it its own).
SETTINGS_READERS = ("core/settings.py", "runtime/settings.py", "worker.py", "starter.py", "temporal/codec_server.py")
_SETTINGS_READ = re.compile(r"\bfrom_process\b|\.from_env\(|\bload_settings\(")
_PATH = re.compile(r"`((?:[a-z_]+/)*[a-z_]+\.py)`")
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
    """The source files ``docs/turn.md``'s "The turn" section names, that exist."""
    text = (root / "docs" / "turn.md").read_text(encoding="utf-8")
    section = text.split("## The turn", 1)[-1].split("\n## ", 1)[0]
    return sorted({m for m in _PATH.findall(section) if (root / m).is_file()})


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
    print(f"files on one turn's path (docs/turn.md): {len(house.turn_files)}  [target <= 15]")
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
