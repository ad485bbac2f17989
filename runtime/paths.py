"""Where the project keeps its files on this host: one place to decide, used by the store,
the audit log, the prompt context, the background workers and the embedded Temporal server.

One rule, whatever runs the code (the installed ``durable-agent`` command, ``python
starter.py`` in a checkout, an editable install of either) and from whichever directory:
``AGENT_DATA_DIR`` (``PathSettings.data_dir``) when set, else ``$XDG_DATA_HOME/durable-agent``
(by default ``~/.local/share/durable-agent``). Nothing depends on where the code or the current
directory is, so every copy on a host finds the same embedded server, background workers and
context store, as it finds the same server port (docs/deployment.md#the-data-directory).
"""

from __future__ import annotations

from pathlib import Path

from core.settings import PathSettings, Settings

APP_NAME = "durable-agent"


def data_dir(settings: PathSettings) -> Path:
    """The data directory ``settings`` name, created on first use; absolute, so a process this
    one starts elsewhere (a background worker) is handed the same one."""
    path = settings.data_dir or (settings.xdg_data_home or Path.home() / ".local" / "share") / APP_NAME
    path = path.expanduser().absolute()
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
