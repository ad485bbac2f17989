"""``worker [--processes N] [--metrics-port PORT]``: the task queue's workers, as
``python worker.py`` runs them (an installed ``durable-agent`` has no checkout to run it from)."""

from __future__ import annotations

import argparse

import worker


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("worker", help="run worker processes for the task queue (default: one per core)")
    worker.add_options(s)
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    return await worker.serve(args)
