"""What a model call cost, in USD, from a price table: an estimate, not a bill.

``BUILTIN_PRICES`` holds list prices per million tokens of a few well-known models; a JSON
file (``AGENT_PRICES_FILE``, or prices in the models file) extends or overrides it. Names
match exactly, then by the longest table name that is a prefix followed by "-", ":" or "@",
then the same after any "vendor/" prefix. A model in no table is priced at the ``"*"`` row,
else at ``FALLBACK_PRICE``, and marked estimated: a cost limit must still stop a task on a
model nobody priced. Sources, the file's format: docs/providers.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from core.messages import Usage
from core.settings import ModelTableSettings

PRICES_FILE_ENV = "AGENT_PRICES_FILE"
MODELS_FILE_ENV = "AGENT_MODELS_FILE"  # read here for prices, in providers/models.py for limits
PRICE_FIELDS = ("input", "output", "cache_read", "cache_write")
WILDCARD = "*"
_SEPARATORS = ("-", ":", "@")
T = TypeVar("T")


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


BUILTIN_PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-4o": Price(2.50, 10.00, 1.25, 2.50),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075, 0.15),
    "gpt-4.1": Price(2.00, 8.00, 0.50, 2.00),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10, 0.40),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025, 0.10),
    "o3": Price(2.00, 8.00, 0.50, 2.00),
    "o4-mini": Price(1.10, 4.40, 0.275, 1.10),
    # Anthropic
    "claude-opus-4": Price(15.00, 75.00, 1.50, 18.75),
    "claude-opus-4-1": Price(15.00, 75.00, 1.50, 18.75),
    "claude-opus-4-5": Price(5.00, 25.00, 0.50, 6.25),
    "claude-opus-4-6": Price(5.00, 25.00, 0.50, 6.25),
    "claude-opus-4-7": Price(5.00, 25.00, 0.50, 6.25),
    "claude-sonnet-4": Price(3.00, 15.00, 0.30, 3.75),
    "claude-3-7-sonnet": Price(3.00, 15.00, 0.30, 3.75),
    "claude-haiku-4-5": Price(1.00, 5.00, 0.10, 1.25),
    "claude-3-5-haiku": Price(0.80, 4.00, 0.08, 1.00),
    # Offline: the demo model and the tests' scripted model cost nothing
    "demo-scripted": Price(0.0, 0.0, 0.0, 0.0),
    "scripted-model": Price(0.0, 0.0, 0.0, 0.0),
}


FALLBACK_PRICE = Price(1.00, 4.00, 1.00, 1.00)


def load_prices(tables: ModelTableSettings) -> dict[str, Price]:
    """The built-in table with the models file's prices and the prices file merged over it.

    A missing or malformed file raises ValueError naming the file: a price table
    that silently fails to load would report every call as free.
    """
    prices = dict(BUILTIN_PRICES)
    if tables.models_file is not None:
        models_path = str(tables.models_file)
        from providers.models import read_models_file

        for model, entry in read_models_file(models_path).items():
            priced = {k: v for k, v in entry.items() if k in PRICE_FIELDS}
            if priced:
                prices[model] = _price(priced, f"{MODELS_FILE_ENV}={models_path}: {model}")
    if tables.prices_file is None:
        return prices
    path = str(tables.prices_file)
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{PRICES_FILE_ENV}={path}: cannot read prices: {exc}") from exc
    if not isinstance(raw, dict):
        raise ValueError(f"{PRICES_FILE_ENV}={path}: expected a JSON object of models")
    for model, entry in raw.items():
        prices[model] = _price(entry, f"{PRICES_FILE_ENV}={path}: {model}")
    return prices


def check_tables(tables: ModelTableSettings) -> None:
    """Read the prices and models files as a task would (ValueError naming the file), so an
    entry point refuses a bad one in one line when it starts, not at a task's first call."""
    load_prices(tables)
    from providers.models import load_models

    load_models(tables)


# The row each (table, model) matched: a model named in no row (a local server's own name)
# is otherwise compared with every row, several times a model call. Kept with the table
# itself and its size, so a table that changes is matched again.
_MATCHED: dict[tuple[int, str], tuple[Mapping[str, Any], int, str | None]] = {}


def lookup(model: str, table: Mapping[str, T]) -> T | None:
    """A model's row (exact, then longest prefix, then without vendor/); None if none."""
    kept = _MATCHED.get((id(table), model))
    if kept is not None and kept[0] is table and kept[1] == len(table) and (kept[2] is None or kept[2] in table):
        return table[kept[2]] if kept[2] is not None else None
    row = _match(model, table)
    _MATCHED[(id(table), model)] = (table, len(table), row)
    if len(_MATCHED) > 256:
        del _MATCHED[next(iter(_MATCHED))]
    return table[row] if row is not None else None


def _match(model: str, table: Mapping[str, Any]) -> str | None:
    for name in (model, model.rsplit("/", 1)[-1]):
        if name in table:
            return name
        matches = [k for k in table if name.startswith(k) and name[len(k):len(k) + 1] in _SEPARATORS]
        if matches:
            return max(matches, key=len)
    return None


def find_price(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price row for a model name (exact, then longest prefix, then without vendor/)."""
    return lookup(model, prices)


def is_priced(model: str, prices: Mapping[str, Price]) -> bool:
    return find_price(model, prices) is not None


def cost_usd(model: str, usage: Usage, prices: Mapping[str, Price]) -> float:
    """The call's cost in USD; a model in no table at the ``"*"`` row or FALLBACK_PRICE."""
    price = find_price(model, prices) or prices.get(WILDCARD) or FALLBACK_PRICE
    uncached = max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens)
    total = (
        uncached * price.input
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
        + usage.output_tokens * price.output
    )
    return total / 1_000_000


def _price(entry: Any, where: str) -> Price:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected an object with input and output prices")
    unknown = set(entry) - set(PRICE_FIELDS)
    if unknown:
        raise ValueError(f"{where}: unknown fields {sorted(unknown)}")
    values: dict[str, float] = {}
    for key in ("input", "output", "cache_read", "cache_write"):
        value = entry.get(key, entry.get("input") if key.startswith("cache") else None)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
            raise ValueError(f"{where}: {key} must be a non-negative number, got {value!r}")
        values[key] = float(value)
    return Price(**values)
