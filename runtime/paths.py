"""Where the project keeps its files on this host: one place to decide, used by the store,
the audit log, the prompt context and the embedded Temporal server.

In a source checkout everything lives under ``<checkout>/data``; an installed copy (a
non-editable ``pip install .``) uses ``$XDG_DATA_HOME/durable-agent`` (by default
``~/.local/share/durable-agent``), since its package folder is no place for data.
``AGENT_DATA_DIR`` (``PathSettings.data_dir``) overrides both.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from core.settings import PathSettings, Settings

APP_NAME = "durable-agent"


@cache  # the code does not move while it runs (and resolving it costs a realpath per call)
def source_root() -> Path | None:
    """The checkout this code runs from, or None for an installed copy."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def data_dir(settings: PathSettings) -> Path:
    """The data directory ``settings`` name, created on first use."""
    if settings.data_dir is not None:
        path = settings.data_dir
    elif (root := source_root()) is not None:
        path = root / "data"
    else:
        path = (settings.xdg_data_home or Path.home() / ".local" / "share") / APP_NAME
    path.mkdir(parents=True, exist_ok=True)
    return path


def hidden_paths(settings: Settings) -> tuple[Path, ...]:
    """The worker's own files a sandboxed command must not see (the host's are hidden by the
    sandbox itself): its data directory (store, audit log, checkpoints, sessions, the
    workspaces of evals), secrets file, context store and MCP config (it may name tokens)."""
    paths = [data_dir(settings.paths)]
    db = settings.store.context_db
    for path in (settings.secrets.file, Path(db).expanduser() if db and "://" not in db else None, settings.mcp.config):
        if path is not None:
            paths.append(path)
    return tuple(paths)
