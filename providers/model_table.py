"""What each model takes and costs, in one table: its window, longest reply, images, prices.

A model call needs four facts about its model (the reply's budget, whether images may be
sent, whether to ask a local server for its window, the cost); they sit in one row so one
lookup answers them all. ``BUILTIN_MODELS`` holds the published limits and list prices (USD
per million tokens) of well-known models; the user's files merge over it: ``AGENT_MODELS_FILE``
(limits, ``vision`` and prices) then ``AGENT_PRICES_FILE`` (prices). A bad file is a
ValueError naming it, in one line: a table that silently failed to load would send images to
a text-only model or report every call as free.

Names match exactly, then by the longest row that is a prefix followed by "-", ":" or "@",
then the same after any "vendor/". A model in no row, or a row without limits (priced only),
gets ``DEFAULT_WINDOW`` (until its server or an overflow error names the real one,
providers/window.py) and no images; a model without a price is priced at the ``"*"`` row, else
``FALLBACK_PRICE``, and marked estimated, so a cost limit still stops it. docs/providers.md.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.messages import Usage
from core.settings import ModelTableSettings

MODELS_FILE_ENV, PRICES_FILE_ENV = "AGENT_MODELS_FILE", "AGENT_PRICES_FILE"
PRICE_FIELDS = ("input", "output", "cache_read", "cache_write")
LIMIT_FIELDS = ("context_window", "max_output", "vision")
DEFAULT_WINDOW = 32_768
DEFAULT_MAX_OUTPUT = 8192
MIN_OUTPUT = 256  # a reply never gets fewer tokens than this, however full the window
WILDCARD = "*"
_SEPARATORS = ("-", ":", "@")


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


@dataclass(frozen=True)
class ModelRow:
    context_window: int | None = None  # None: not known (a row that only prices the model)
    max_output: int = DEFAULT_MAX_OUTPUT
    vision: bool = False  # an image sent to a text-only model fails the whole call
    price: Price | None = None  # None: not priced


def _row(window: int, output: int, price: Price, vision: bool = True) -> ModelRow:
    return ModelRow(window, output, vision, price)


FALLBACK_PRICE = Price(1.00, 4.00, 1.00, 1.00)
FREE = Price(0.0, 0.0, 0.0, 0.0)

BUILTIN_MODELS: dict[str, ModelRow] = {
    # OpenAI
    "gpt-4o": _row(128_000, 16_384, Price(2.50, 10.00, 1.25, 2.50)),
    "gpt-4o-mini": _row(128_000, 16_384, Price(0.15, 0.60, 0.075, 0.15)),
    "gpt-4.1": _row(1_047_576, 32_768, Price(2.00, 8.00, 0.50, 2.00)),
    "gpt-4.1-mini": _row(1_047_576, 32_768, Price(0.40, 1.60, 0.10, 0.40)),
    "gpt-4.1-nano": _row(1_047_576, 32_768, Price(0.10, 0.40, 0.025, 0.10)),
    "o3": _row(200_000, 100_000, Price(2.00, 8.00, 0.50, 2.00)),
    "o4-mini": _row(200_000, 100_000, Price(1.10, 4.40, 0.275, 1.10)),
    # Anthropic
    "claude-opus-4": _row(200_000, 32_000, Price(15.00, 75.00, 1.50, 18.75)),
    "claude-opus-4-1": _row(200_000, 32_000, Price(15.00, 75.00, 1.50, 18.75)),
    "claude-opus-4-5": _row(200_000, 64_000, Price(5.00, 25.00, 0.50, 6.25)),
    "claude-opus-4-6": _row(200_000, 64_000, Price(5.00, 25.00, 0.50, 6.25)),
    "claude-opus-4-7": _row(200_000, 64_000, Price(5.00, 25.00, 0.50, 6.25)),
    "claude-sonnet-4": _row(200_000, 64_000, Price(3.00, 15.00, 0.30, 3.75)),
    "claude-3-7-sonnet": _row(200_000, 64_000, Price(3.00, 15.00, 0.30, 3.75)),
    "claude-haiku-4-5": _row(200_000, 64_000, Price(1.00, 5.00, 0.10, 1.25)),
    "claude-3-5-haiku": _row(200_000, 8_192, Price(0.80, 4.00, 0.08, 1.00)),
    # Offline: the demo model and the tests' scripted model take no images and cost nothing
    "demo-scripted": _row(128_000, 4_096, FREE, vision=False),
    "scripted-model": _row(128_000, 4_096, FREE, vision=False),
}


def load_models(tables: ModelTableSettings) -> dict[str, ModelRow]:
    """The built-in table with the models file, then the prices file, merged over it (a bad
    file raises ValueError naming it: the entry points call this when they start)."""
    models = dict(BUILTIN_MODELS)
    if tables.models_file is not None:
        for model, entry, where in _read_table(tables.models_file, MODELS_FILE_ENV, LIMIT_FIELDS + PRICE_FIELDS):
            models[model] = _limits(entry, models.get(model, ModelRow()), where)
    if tables.prices_file is not None:
        for model, entry, where in _read_table(tables.prices_file, PRICES_FILE_ENV, PRICE_FIELDS):
            models[model] = dataclasses.replace(models.get(model, ModelRow()), price=_price(entry, where))
    return models


def _read_table(path: Path, env: str, fields: tuple[str, ...]) -> list[tuple[str, dict[str, Any], str]]:
    """A user's file: a JSON object of models, each an object of ``fields``; with where each is."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{env}={path}: cannot read it: {exc}") from exc
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise ValueError(f"{env}={path}: expected a JSON object of models, each an object")
    for model, entry in raw.items():
        if unknown := set(entry) - set(fields):
            raise ValueError(f"{env}={path}: {model}: unknown fields {sorted(unknown)}")
    return [(model, entry, f"{env}={path}: {model}") for model, entry in raw.items()]


def _limits(entry: dict[str, Any], known: ModelRow, where: str) -> ModelRow:
    window = entry.get("context_window", known.context_window or DEFAULT_WINDOW)
    output = entry.get("max_output", known.max_output)
    for key, value in (("context_window", window), ("max_output", output)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{where}: {key} must be a positive integer, got {value!r}")
    vision = entry.get("vision", known.vision)
    if not isinstance(vision, bool):  # "yes", 1, "false": a typo must not decide what is sent
        raise ValueError(f"{where}: vision must be true or false, got {vision!r}")
    price = _price(entry, where) if set(entry) & set(PRICE_FIELDS) else known.price
    return ModelRow(window, output, vision, price)


def _price(entry: dict[str, Any], where: str) -> Price:
    """Input and output are needed; the cache's prices default to the input's."""
    values: dict[str, float] = {}
    for key in PRICE_FIELDS:
        value = entry.get(key, entry.get("input") if key.startswith("cache") else None)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
            raise ValueError(f"{where}: {key} must be a non-negative number, got {value!r}")
        values[key] = float(value)
    return Price(**values)


# The row each (table, model) matched: a model named in no row (a local server's own name)
# is otherwise compared with every row, several times a model call. Kept with the table
# itself and its size, so a table that changes is matched again.
_MATCHED: dict[tuple[int, str], tuple[Mapping[str, ModelRow], int, str | None]] = {}


def find_row(model: str, table: Mapping[str, ModelRow]) -> ModelRow | None:
    """A model's row (exact, then longest prefix, then without vendor/); None if none."""
    kept = _MATCHED.get((id(table), model))
    if kept is not None and kept[0] is table and kept[1] == len(table) and (kept[2] is None or kept[2] in table):
        return table[kept[2]] if kept[2] is not None else None
    name = _match(model, table)
    _MATCHED[(id(table), model)] = (table, len(table), name)
    if len(_MATCHED) > 256:
        del _MATCHED[next(iter(_MATCHED))]
    return table[name] if name is not None else None


def _match(model: str, table: Mapping[str, ModelRow]) -> str | None:
    for name in (model, model.rsplit("/", 1)[-1]):
        if name in table:
            return name
        matches = [k for k in table if name.startswith(k) and name[len(k):len(k) + 1] in _SEPARATORS]
        if matches:
            return max(matches, key=len)
    return None


def knows_window(model: str, table: Mapping[str, ModelRow]) -> bool:
    """Whether the table has the model's window (else its server may be asked)."""
    row = find_row(model, table)
    return row is not None and row.context_window is not None


def context_window(model: str, table: Mapping[str, ModelRow]) -> int:
    row = find_row(model, table)
    return row.context_window if row is not None and row.context_window is not None else DEFAULT_WINDOW


def accepts_images(model: str, table: Mapping[str, ModelRow]) -> bool:
    """Whether ``model`` takes images, by its row (built in, or the models file's ``"vision"``)."""
    row = find_row(model, table)
    return row is not None and row.vision


def reply_budget(model: str, table: Mapping[str, ModelRow], window: int, prompt_tokens: int) -> int:
    """Tokens to ask for the reply: the model's maximum, but never more than the window
    leaves after the prompt (servers such as vLLM refuse prompt + max_tokens > window)."""
    row = find_row(model, table) or ModelRow()
    return max(MIN_OUTPUT, min(row.max_output, window - prompt_tokens))


def find_price(model: str, table: Mapping[str, ModelRow]) -> Price | None:
    row = find_row(model, table)
    return row.price if row is not None else None


def cost_usd(model: str, usage: Usage, table: Mapping[str, ModelRow]) -> float:
    """The call's cost in USD, an estimate and not a bill; a model without a price at the
    ``"*"`` row's or FALLBACK_PRICE."""
    wildcard = table.get(WILDCARD)
    price = find_price(model, table) or (wildcard.price if wildcard else None) or FALLBACK_PRICE
    uncached = max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens)
    total = (
        uncached * price.input
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
        + usage.output_tokens * price.output
    )
    return total / 1_000_000
