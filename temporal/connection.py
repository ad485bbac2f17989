"""Where the CLI and the worker connect, as Temporal's own tools decide it.

``--address``, ``--namespace`` and ``--profile`` (on every command and on ``worker.py``) win
over ``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE`` and ``TEMPORAL_PROFILE``, which win over the
envconfig profile (``TEMPORAL_CONFIG_FILE``, or the SDK's default file). Only when none of
them names an address is it the embedded dev server. The entry points ``resolve`` this once
and pass the settings down; ``connect_config`` turns them into ``Client.connect``'s arguments.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from temporalio.envconfig import ClientConfigProfile

from core.settings import TemporalSettings
from temporal.server import EMBEDDED_HOST

OPTIONS = ("address", "namespace", "profile")


def add_options(parser: argparse.ArgumentParser) -> None:
    """The three options, absent from ``args`` unless given (so a subcommand's parser does
    not overwrite what its parent's parsed)."""
    group = parser.add_argument_group("Temporal connection")
    group.add_argument("--address", default=argparse.SUPPRESS, metavar="HOST:PORT",
                       help="the Temporal frontend (default: $TEMPORAL_ADDRESS, the profile's, or the embedded server)")
    group.add_argument("--namespace", default=argparse.SUPPRESS,
                       help="the Temporal namespace (default: $TEMPORAL_NAMESPACE, the profile's, or default)")
    group.add_argument("--profile", default=argparse.SUPPRESS,
                       help="an envconfig profile of $TEMPORAL_CONFIG_FILE (default: $TEMPORAL_PROFILE or default)")


def given(args: argparse.Namespace) -> dict[str, str]:
    """The connection options given on the command line."""
    return {name: value for name in OPTIONS if (value := getattr(args, name, None))}


def as_arguments(settings: TemporalSettings) -> list[str]:
    """Options that make a child process (the background worker) connect as ``settings`` do."""
    return [arg for name in OPTIONS if (value := getattr(settings, name)) for arg in (f"--{name}", value)]


def load_profile(settings: TemporalSettings) -> ClientConfigProfile:
    """The envconfig profile ``settings`` name, with the TEMPORAL_* overrides the SDK applies
    (ValueError when the file or the profile cannot be read)."""
    try:
        return ClientConfigProfile.load(profile=settings.profile, config_source=settings.config_file)
    except Exception as err:  # the SDK's ConfigError (from its native bridge), or an unreadable file
        raise ValueError(f"Temporal profile {settings.profile or 'default'}: {err}") from None


def resolve(settings: TemporalSettings, options: dict[str, str] | None = None) -> TemporalSettings:
    """``settings`` with the command-line ``options`` over them, and the profile's address and
    namespace where neither says: what ``embedded`` decides from."""
    options = options or {}
    settings = dataclasses.replace(settings, **options, given=tuple(options.items()))
    profile = load_profile(settings)
    return dataclasses.replace(settings, address=settings.address or profile.address,
                               namespace=settings.namespace or profile.namespace)


def connect_config(settings: TemporalSettings) -> dict[str, Any]:
    """``Client.connect``'s arguments: the profile's (API key, TLS, gRPC metadata), with the
    address and namespace of ``settings``; the embedded server's when they name none."""
    config: dict[str, Any] = dict(load_profile(settings).to_client_connect_config())
    config["target_host"] = settings.address or f"{EMBEDDED_HOST}:{settings.embedded_port}"
    config["namespace"] = settings.namespace or "default"
    return config
