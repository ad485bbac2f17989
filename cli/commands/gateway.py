"""``gateway --config channels.toml``: talk to the agent from chat (Matrix, webhooks, ...).

Argument handling only: the gateway itself (the adapters of the file's tables and the worker of
their conversations) is channels/gateway.py; a channel whose library is missing is skipped with
one line saying what to install. Its log lines are its console: one for each message handed over
or dropped (channels/console.py), at INFO unless ``AGENT_LOG_LEVEL`` says otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from channels.gateway import Defaults, Gateway, load_adapters
from cli.background import connect_serving
from cli.tasks import UserError, configured_model, model_window, provider_mode
from contracts.channels import GATEWAY_TASK_QUEUE
from runtime.paths import data_dir
from runtime.secrets import SecretStore
from temporal.client import is_embedded


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("gateway", help="connect chat channels (channels.toml) to the agent")
    s.add_argument("--config", required=True, type=Path, help="the channels file: one table per channel")
    s.add_argument("--queue", default=GATEWAY_TASK_QUEUE, help="the gateway's own task queue")
    s.set_defaults(run=run, logs_to_console=True)  # one line per message on stderr (channels/console.py)


async def run(args: argparse.Namespace) -> int:
    settings = args.settings  # starter.py's (its log lines go to stderr, the SDK's to the data directory's worker.log)
    secrets = SecretStore.from_settings(settings.secrets)
    try:
        adapters, off = load_adapters(args.config, secrets, data_dir(settings.paths) / "gateway")
    except ValueError as err:
        raise UserError(str(err)) from None
    for line in off:
        print(line, file=sys.stderr)
    if not adapters:
        raise UserError("no channel can run: see above")
    model = configured_model(args)
    client, queue = await connect_serving(settings)  # its tasks run with the gateway's own model settings
    defaults = Defaults(model=model, provider=provider_mode(args), task_queue=queue,
                        data_dir=data_dir(settings.paths), context_window=model_window(model, settings.models), secrets=secrets)
    print(f"gateway: {', '.join(c.name for c, _ in adapters)}; tasks on {defaults.task_queue}", file=sys.stderr)
    await Gateway(client, adapters, defaults, queue=args.queue, register=is_embedded(settings.temporal)).run()
    return 0
