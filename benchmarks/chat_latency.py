"""How long a chat message takes to reach the model, and the model's answer to reach the chat.

    python -m benchmarks.chat_latency [--runs 5]

A local Synapse (``matrix-synapse``, on SQLite, as the tests start it), ``starter.py gateway``
(its Matrix adapter and conversation worker) as its own process, and a task worker whose model is the scripted server,
all on one machine with the embedded Temporal dev server. A person (a matrix-nio client)
writes in a room, ``--runs`` times, one message after the other's answer:

- **message → first model call**: from the person's send returning to the model server
  receiving the task's first request (the gateway's sync, signal-with-start, the
  conversation starting the task, the task's setup and session history);
- **answer → chat reply**: from the model server answering to the answer showing in the
  person's sync (the task's end, its report to the conversation, the ``deliver`` activity,
  Synapse, the person's sync).

Prints the median and the worst of each, in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fakes.step import Step
from runtime.logs import configure_logging
from runtime.secrets import SecretStore
from runtime.settings import load_settings
from temporal.server import start_local_env
from tests.channels.matrix_users import ChatUser
from tests.channels.synapse import PASSWORDS, Synapse, synapse_problem
from tests.workflows.harness import scripted_worker

AGENT = "@agent:localhost"
ROOT = Path(__file__).resolve().parent.parent


def spawn_gateway(target: str, root: Path, homeserver: str) -> subprocess.Popen:
    """``starter.py gateway`` as people run it, its tasks on the benchmark's worker."""
    config = root / "channels.toml"
    config.write_text(f'''[matrix]
homeserver = "{homeserver}"
user_id = "{AGENT}"
password = "{{{{secret:MATRIX_PASSWORD}}}}"
allowed_users = ["@alice:localhost"]
approvers = ["@alice:localhost"]
workspace = "{root}"
''')
    env = dict(os.environ, TEMPORAL_ADDRESS=target, TEMPORAL_NAMESPACE="default", AGENT_TASK_QUEUE="bench-chat",
               AGENT_MODEL="scripted-model", AGENT_DATA_DIR=str(root / "gateway"),
               AGENT_SECRET_MATRIX_PASSWORD=PASSWORDS["agent"])
    return subprocess.Popen([sys.executable, "starter.py", "gateway", "--config", str(config)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def measure(runs: int, root: Path) -> tuple[list[float], list[float]]:
    synapse = Synapse(root / "synapse").start()
    env = await start_local_env()
    try:
        for name in ("agent", "alice"):
            synapse.register(name, PASSWORDS[name])
        steps = [Step(tool_calls=[("message", {"type": "result", "text": f"answer {n}"})], hold=True)
                 for n in range(runs)]
        inbound, outbound = [], []
        alice = await ChatUser(synapse.url, "@alice:localhost").login(PASSWORDS["alice"])
        async with scripted_worker(env.client, "bench-chat", steps) as model:
            gateway = spawn_gateway(env.client.service_client.config.target_host, root, synapse.url)
            while not list((root / "gateway" / "gateway").glob("*.sync")):  # its first sync: from now on
                assert gateway.poll() is None, "the gateway exited"
                await asyncio.sleep(0.05)
            room = await alice.create_room(invite=[AGENT])
            await alice.until(lambda: alice.joined(room, AGENT), "the agent to join")
            for n in range(runs):
                sent = time.perf_counter()
                await alice.say(room, f"question {n}")
                while len(model.requests) <= n:
                    await asyncio.sleep(0.002)
                inbound.append(time.perf_counter() - sent)
                answered = time.perf_counter()
                model.release()
                await alice.until(lambda n=n: f"answer {n}" in alice.bodies(room, AGENT), "the answer")
                outbound.append(time.perf_counter() - answered)
            gateway.terminate()
            gateway.wait(10)
        await alice.close()
        return inbound, outbound
    finally:
        await env.shutdown()
        synapse.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    problem = synapse_problem()
    if problem:
        raise SystemExit(problem)
    configure_logging("WARNING", secrets=SecretStore.from_settings(load_settings().secrets))
    with tempfile.TemporaryDirectory() as tmp:
        inbound, outbound = asyncio.run(measure(args.runs, Path(tmp)))
    for label, times in (("message -> first model call", inbound), ("answer -> chat reply", outbound)):
        ms = [t * 1000 for t in times]
        print(f"{label:30} median {statistics.median(ms):7.0f} ms   worst {max(ms):7.0f} ms   ({len(ms)} runs)")


if __name__ == "__main__":
    main()
