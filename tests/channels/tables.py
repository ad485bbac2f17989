"""A ``channels.toml`` table as the gateway loads it, built in a test: typed, extras and all."""

from __future__ import annotations

from typing import Any

from channels.config import ChannelConfig


def table(**keys: Any) -> ChannelConfig:
    return ChannelConfig.model_validate(keys)
