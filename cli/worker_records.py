"""Which background worker a task belongs to: one per model settings, each on its own task
queue, with its own pid, log and record in the data directory.

A worker serves every task of its queue with the settings it started with (the provider's
URL and key come from its environment, never from the task). So the queue carries the
settings: ``agent-tasks@<digest>``, the digest over what decides which model answers and how
(the model, provider and fallback defaults, the provider and model-table groups). Keys count
(a key exported since gets its own worker) but only hashed: the queue name is in every
task's history. Two commands with the same settings share a queue, and so a worker.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contracts.task import DEFAULT_TASK_QUEUE
from core.settings import Settings

WORKERS_DIR = "workers"  # under the data directory: <queue>.pid, <queue>.log, <queue>.json
DIGEST_CHARS = 12


def settings_digest(settings: Settings) -> str:
    """A short hash of the model-affecting settings; secrets enter it hashed on their own."""
    groups = {"task": _plain(settings.task), "providers": _plain(settings.providers), "models": _plain(settings.models)}
    for name, value in list(groups["providers"].items()):
        if name.endswith("_api_key") and value is not None:
            groups["providers"][name] = hashlib.sha256(str(value).encode()).hexdigest()
    groups["task"] = {k: groups["task"][k] for k in ("model", "provider", "fallback")}
    return hashlib.sha256(json.dumps(groups, sort_keys=True).encode()).hexdigest()[:DIGEST_CHARS]


def queue_for(settings: Settings) -> str:
    """The task queue of the background worker with these settings (``AGENT_TASK_QUEUE``
    when set: a queue the person chose is theirs)."""
    return settings.temporal.task_queue or f"{DEFAULT_TASK_QUEUE}@{settings_digest(settings)}"


def served_model(settings: Settings) -> str:
    """What a worker with these settings answers with, in words, without any secret."""
    task, providers = settings.task, settings.providers
    url = providers.anthropic_base_url if task.provider == "anthropic" else providers.openai_base_url
    return f"{task.model or '(no model set)'} · {task.provider} at {url}"


@dataclasses.dataclass(frozen=True)
class WorkerFiles:
    """The files of the background worker of one task queue."""

    directory: Path
    queue: str

    @property
    def pid(self) -> Path:
        return self.directory / f"{self.queue}.pid"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.queue}.log"

    @property
    def record(self) -> Path:
        return self.directory / f"{self.queue}.json"

    @property
    def lock(self) -> Path:
        return self.directory / f"{self.queue}.lock"

    def write_record(self, settings: Settings) -> None:
        self.record.write_text(json.dumps({"queue": self.queue, "model": served_model(settings)}))

    def model(self) -> str:
        """The model its record names ("unknown" when there is none)."""
        try:
            return str(json.loads(self.record.read_text())["model"])
        except (OSError, ValueError, KeyError, TypeError):
            return "unknown"


def workers_dir(data: Path) -> Path:
    path = data / WORKERS_DIR
    path.mkdir(parents=True, exist_ok=True)
    return path


def files_for(data: Path, queue: str) -> WorkerFiles:
    return WorkerFiles(workers_dir(data), queue)


def known(data: Path) -> Iterator[WorkerFiles]:
    """Every background worker this data directory has started (running or not), by its record."""
    for record in sorted(workers_dir(data).glob("*.json")):
        yield WorkerFiles(record.parent, record.name.removesuffix(".json"))


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)
