"""Secrets the model must never see: redacted to placeholders, restored at execution.

Where secrets come from (``SecretStore.from_settings``, given ``Settings.secrets``):

- environment variables ``AGENT_SECRET_<NAME>=value``; ``NAME`` is kept as written;
- the file named by ``AGENT_SECRETS_FILE``, one ``NAME=value`` per line. Blank
  lines and lines starting with ``#`` are skipped; the value is everything after
  the first ``=``, stripped of surrounding whitespace and of one pair of matching
  quotes. An environment variable wins over the file for the same name.

Names match ``[A-Za-z_][A-Za-z0-9_]*``. A secret appears in text the model sees
as ``{{secret:NAME}}``; its standard base64, unpadded URL-safe base64 and
URL-encoded forms appear as ``{{secret:NAME:base64}}``, ``{{secret:NAME:base64url}}``
and ``{{secret:NAME:url}}``, so ``restore`` gives back exactly what was there.
Values shorter than ``MIN_SECRET_CHARS`` are not redacted (they would shred
ordinary text; a warning names them) but their placeholders are still restored.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import structlog
from pydantic import BaseModel

from core.settings import SECRET_PREFIX, SecretSettings

ENV_PREFIX = SECRET_PREFIX
FILE_ENV = "AGENT_SECRETS_FILE"
MIN_SECRET_CHARS = 4

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER = re.compile(r"\{\{secret:([A-Za-z_][A-Za-z0-9_]*)(?::(base64|base64url|url))?\}\}")

# How a value may be encoded in text, in the order variants are tried when two coincide.
_FORMS: dict[str, Callable[[str], str]] = {
    "": lambda v: v,
    "base64": lambda v: base64.b64encode(v.encode()).decode(),
    "base64url": lambda v: base64.urlsafe_b64encode(v.encode()).decode().rstrip("="),
    "url": lambda v: quote(v, safe=""),
}

_log = structlog.get_logger(__name__)

T = TypeVar("T")


class SecretsError(ValueError):
    """A secret name or the secrets file is malformed (the message never holds a value)."""


def placeholder(name: str, form: str = "") -> str:
    return f"{{{{secret:{name}{':' + form if form else ''}}}}}"


class SecretStore:
    """An immutable set of named secrets with redaction and restoration."""

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        self._values: dict[str, str] = {}
        for name, value in (secrets or {}).items():
            if not _NAME.fullmatch(name):
                raise SecretsError(f"invalid secret name {name!r}: use letters, digits and _")
            if value:
                self._values[name] = value
        variants: dict[str, tuple[str, str]] = {}  # encoded text -> (name, form)
        for name, value in sorted(self._values.items()):
            if len(value) < MIN_SECRET_CHARS:
                _log.warning(
                    "secret too short to redact", secret=name, min_chars=MIN_SECRET_CHARS
                )
                continue
            for form, encode in _FORMS.items():
                variants.setdefault(encode(value), (name, form))
        self._variants = variants
        # Longest first: the regex takes the first alternative that matches at a
        # position, so a secret containing another is replaced whole.
        # Existing placeholders come first and are kept, so redacting twice is harmless.
        ordered = sorted(variants, key=len, reverse=True)
        alternatives = [_PLACEHOLDER.pattern, *map(re.escape, ordered)]
        self._pattern = re.compile("|".join(alternatives)) if ordered else None

    @classmethod
    def from_settings(cls, settings: SecretSettings) -> SecretStore:
        """The file's secrets, then the variables' (which win for the same name)."""
        secrets: dict[str, str] = {}
        if settings.file is not None:
            secrets.update(read_secrets_file(settings.file))
        secrets.update(settings.values)
        return cls(secrets)

    def names(self) -> list[str]:
        return sorted(self._values)

    @property
    def is_empty(self) -> bool:
        return not self._values

    def __repr__(self) -> str:  # never the values
        return f"SecretStore(names={self.names()!r})"

    # --- text ----------------------------------------------------------------

    def redact(self, text: str) -> str:
        if self._pattern is None or not text:
            return text

        def replace(match: re.Match[str]) -> str:
            found = self._variants.get(match.group(0))
            return placeholder(*found) if found else match.group(0)

        return self._pattern.sub(replace, text)

    def restore(self, text: str) -> str:
        if not self._values or "{{secret:" not in text:
            return text

        def fill(match: re.Match[str]) -> str:
            value = self._values.get(match.group(1))
            if value is None:
                return match.group(0)
            return _FORMS[match.group(2) or ""](value)

        return _PLACEHOLDER.sub(fill, text)

    # --- structures ----------------------------------------------------------

    def redact_obj(self, obj: T) -> T:
        """A copy of ``obj`` with every string redacted (str, list, tuple, dict keys
        and values, pydantic models, nested); other values are returned as they are. With no
        secrets there is nothing to redact: ``obj`` itself comes back."""
        if self._pattern is None:
            return obj
        return _walk(obj, self.redact)

    def restore_obj(self, obj: T) -> T:
        if not self._values:
            return obj
        return _walk(obj, self.restore)


def _walk(obj: Any, fix: Callable[[str], str]) -> Any:
    if isinstance(obj, str):
        return fix(obj)
    if isinstance(obj, BaseModel):
        # model_copy skips validation, so a redacted value never fails a constraint.
        return obj.model_copy(update={name: _walk(value, fix) for name, value in obj})
    if isinstance(obj, dict):
        return {_walk(k, fix): _walk(v, fix) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_walk(item, fix) for item in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(item, fix) for item in obj)
    return obj


def read_secrets_file(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SecretsError(f"cannot read {FILE_ENV} {path}: {exc.strerror or exc}") from None
    return dict(_parse_lines(text.splitlines(), path))


def _parse_lines(lines: Iterable[str], path: Path) -> Iterable[tuple[str, str]]:
    for lineno, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        name, sep, value = stripped.partition("=")
        name = name.strip()
        if not sep or not _NAME.fullmatch(name):
            raise SecretsError(f"{path}:{lineno}: expected NAME=value")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        yield name, value


def redact_processor(
    store: SecretStore,
) -> Callable[[Any, str, MutableMapping[str, Any]], MutableMapping[str, Any]]:
    """A structlog processor redacting every string in the event dict.

    Put it last before the renderer (after ``format_exc_info``, if used), so
    rendered tracebacks are redacted too.
    """

    def processor(
        _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        if store.is_empty:
            return event_dict
        return {key: store.redact_obj(value) for key, value in event_dict.items()}

    return processor


__all__ = [
    "ENV_PREFIX",
    "FILE_ENV",
    "MIN_SECRET_CHARS",
    "SecretStore",
    "SecretsError",
    "placeholder",
    "read_secrets_file",
    "redact_processor",
]
