"""History size with and without payload compression, on realistic tool output.

    python -m benchmarks.history_compression [--turns 150] [--file-bytes 4096]

A scripted task reads a different file each turn: application logs (timestamps, request
ids, addresses, paths, latencies, user agents drawn from a seeded generator, so every file
differs), then finishes. The same task runs with compression off and on (the default,
``AGENT_CODEC_COMPRESS_OVER=1024``); each row prints the history bytes as the server counts
them and their ratio to what was said (messages, tool calls and results). Target: at most
1.0 with compression on (issue 33).
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from temporalio.client import Client

from benchmarks.common import context_entries, run_reading_benchmark, run_scripted, run_stats, said_bytes
from benchmarks.history_growth import script
from contracts.task import TaskInput
from core.settings import CodecSettings
from runtime.logs import configure_logging
from runtime.secrets import SecretStore
from runtime.settings import load_settings
from runtime.store import ContextStore
from temporal.codec import codec_for, data_converter
from temporal.server import NO_EAGER_ACTIVITIES, start_local_env

PATHS = ("/api/orders", "/api/orders/{n}", "/api/users/{n}/cart", "/healthz", "/static/app.{n}.js", "/login")
AGENTS = ("Mozilla/5.0 (X11; Linux x86_64) Firefox/132.0", "curl/8.5.0", "okhttp/4.12.0", "python-httpx/0.27.2")
LEVELS = ("INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG")


def log_file(seed: int, size: int) -> str:
    """About ``size`` bytes of an access/application log, different for every seed."""
    rng, lines, total = random.Random(seed), [], 0
    while total < size:
        path = rng.choice(PATHS).format(n=rng.randrange(1, 99_999))
        line = (
            f"2026-11-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:"
            f"{rng.randrange(60):02d}.{rng.randrange(1000):03d}Z {rng.choice(LEVELS):<5} "
            f"req={rng.getrandbits(64):016x} ip=10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)} "
            f"{rng.choice(('GET', 'GET', 'POST', 'PUT', 'DELETE'))} {path} status={rng.choice((200, 200, 201, 304, 404, 500))} "
            f"ms={rng.expovariate(1 / 40):.1f} ua=\"{rng.choice(AGENTS)}\"\n"
        )
        lines.append(line)
        total += len(line)
    return "".join(lines)[:size]


async def run(client: Client, turns: int, task: TaskInput, root: Path) -> tuple[int, int, str]:
    store = ContextStore(root / "c.db")
    workflow_id, outcome = await run_scripted(client, script(turns), task, store)
    history = sum(s.history_bytes for s in await run_stats(client, workflow_id))
    return history, said_bytes(context_entries(store)), outcome.status.value


async def main(turns: int, file_bytes: int) -> None:
    configure_logging("WARNING", secrets=SecretStore.from_settings(load_settings().secrets))
    env = await start_local_env(extra_args=NO_EAGER_ACTIVITIES)
    target = env.client.service_client.config.target_host
    rows = []
    try:
        with tempfile.TemporaryDirectory() as ws:
            root = Path(ws)
            workspace = root / "ws"
            workspace.mkdir()
            for i in range(turns):
                (workspace / f"f{i}.txt").write_text(log_file(i, file_bytes))
            task = TaskInput(instruction="read every file", workspace=str(workspace), model="bench", stream=False,
                             max_iterations=turns + 5, search_attributes=True)
            for name, over in (("plain", 0), ("compressed", CodecSettings().compress_over)):
                converter = data_converter(codec_for(CodecSettings(compress_over=over)))
                client = await Client.connect(target, namespace=env.client.namespace, data_converter=converter)
                rows.append((name, over, *await run(client, turns, task, root / name)))
    finally:
        await env.shutdown()
    print(f"turns: {turns}, a different {file_bytes:,} B application log read per turn")
    print(f"{'payloads':<11} {'over B':>6} {'status':<7} {'history B':>11} {'said B':>10} {'/ said':>7}")
    for name, over, history, said, status in rows:
        print(f"{name:<11} {over:>6} {status:<7} {history:>11,} {said:>10,} {history / said:>7.2f}")


if __name__ == "__main__":
    run_reading_benchmark(main)
