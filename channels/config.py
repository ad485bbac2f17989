"""The gateway's ``channels.toml``: one table per channel.

The table's name is the channel's name (what ``ChatRef.channel`` says); its ``type`` is the
platform, the name itself by default (``[matrix]``), so two accounts of one platform are two
tables (``[matrix-ops] type = "matrix"``). Every table has ``allowed_users`` (who may talk to the
agent), ``approvers`` (who may approve its calls; each must be allowed too) and an optional
``workspace``; the rest is the platform's. A value may name a secret, ``{{secret:NAME}}``
(``AGENT_SECRET_NAME`` or the secrets file), so no token is written in the file.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime.secrets import SecretStore

_Settings = TypeVar("_Settings", bound=BaseModel)


@dataclass(frozen=True)
class Refusal:
    """Why a person may not do what their message asks: ``why`` for the gateway's console,
    ``told`` for them (the adapters that can tell a person quietly say it)."""

    why: str
    told: str


NOT_AN_APPROVER = Refusal("not an approver", "Only approvers may decide a call.")
NOT_ALLOWED = Refusal("not in allowed_users", "You are not allowed to talk to this agent.")


class ChannelConfig(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    type: str
    allowed_users: list[str] = Field(default_factory=list)
    approvers: list[str] = Field(default_factory=list)
    workspace: str | None = None

    def allows(self, user: str) -> bool:
        return user in self.allowed_users or user in self.approvers

    def refusal(self, user: str, reaction: str | None = None) -> Refusal | None:
        """Why ``user`` may not do this (approving or denying a call needs an approver;
        anything else an allowed user), or None when they may."""
        if reaction in ("approve", "deny"):
            return None if user in self.approvers else NOT_AN_APPROVER
        return None if self.allows(user) else NOT_ALLOWED

    def settings(self, model: type[_Settings]) -> _Settings:
        """The table's platform keys as the adapter's typed settings (ValueError naming the table)."""
        try:
            return model.model_validate(self.model_extra or {})
        except ValidationError as err:
            first = err.errors()[0]
            raise ValueError(f"channel [{self.name}]: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None

    def get(self, key: str, default: Any = None) -> Any:
        return (self.model_extra or {}).get(key, default)

    def need(self, key: str) -> Any:
        value = self.get(key)
        if value in (None, ""):
            raise ValueError(f"channel [{self.name}] needs {key!r}")
        return value


def load_channels(path: Path, secrets: SecretStore) -> list[ChannelConfig]:
    """The channels of the file at ``path``, secrets filled in (ValueError naming what is wrong)."""
    try:
        tables = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:  # unreadable, not UTF-8, or not TOML (TOMLDecodeError)
        raise ValueError(f"cannot read {path}: {err}") from None
    channels = []
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ValueError(f"{path}: {name!r} is not a table ([{name}])")
        filled = {key: _fill(value, secrets, f"[{name}] {key}") for key, value in table.items()}
        try:
            channels.append(ChannelConfig(**{"type": name, **filled, "name": name}))
        except ValidationError as err:
            raise ValueError(f"{path}: [{name}]: {err.errors()[0]['msg']}") from None
    if not channels:
        raise ValueError(f"{path} names no channel: add a table such as [matrix]")
    return channels


def _fill(value: Any, secrets: SecretStore, where: str) -> Any:
    if not isinstance(value, str) or "{{secret:" not in value:
        return value
    filled = secrets.restore(value)
    if "{{secret:" in filled:
        raise ValueError(f"{where} names a secret that is not set (AGENT_SECRET_<NAME> or AGENT_SECRETS_FILE)")
    return filled
