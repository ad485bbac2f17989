"""The price table: matching model names, the user's file, and the cost of a call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.messages import Usage
from core.settings import ModelTableSettings
from providers.pricing import BUILTIN_PRICES, FALLBACK_PRICE, Price, cost_usd, find_price, load_prices


@pytest.mark.parametrize(
    ("model", "row"),
    [
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("anthropic/claude-sonnet-4", "claude-sonnet-4"),
        ("claude-haiku-4-5@20251001", "claude-haiku-4-5"),
    ],
)
def test_find_price_matches_exactly_then_by_longest_prefix(model: str, row: str):
    assert find_price(model, BUILTIN_PRICES) is BUILTIN_PRICES[row]


@pytest.mark.parametrize("model", ["gpt-4o1", "claude", "llama-3-70b", ""])
def test_find_price_needs_a_separator_after_the_prefix(model: str):
    assert find_price(model, BUILTIN_PRICES) is None


def test_an_unknown_model_is_priced_at_the_fallback_so_cost_limits_still_apply():
    usage = Usage(input_tokens=10**6, output_tokens=10**6)
    assert cost_usd("my-local-model", usage, BUILTIN_PRICES) == pytest.approx(
        FALLBACK_PRICE.input + FALLBACK_PRICE.output)
    free = {**BUILTIN_PRICES, "*": Price(0.0, 0.0, 0.0, 0.0)}  # "this server costs nothing"
    assert cost_usd("my-local-model", usage, free) == 0.0
    assert cost_usd("demo-scripted", usage, BUILTIN_PRICES) == 0.0  # the offline demo is free


def test_the_models_file_gives_limits_and_prices(tmp_path):
    from providers.models import BUILTIN_MODELS, load_models, model_spec, reply_budget

    path = tmp_path / "models.json"
    path.write_text('{"tiny-7b": {"context_window": 4096, "max_output": 1024, "input": 0.5, "output": 1.5}}')
    env = ModelTableSettings.from_env({"AGENT_MODELS_FILE": str(path)})
    spec = model_spec("tiny-7b-q4", load_models(env))
    assert (spec.context_window, spec.max_output) == (4096, 1024)
    assert find_price("tiny-7b", load_prices(env)) == Price(0.5, 1.5, 0.5, 0.5)
    assert reply_budget(spec, 4096, 3500) == 596 and reply_budget(spec, 4096, 100) == 1024
    assert model_spec("unheard-of", BUILTIN_MODELS).context_window == 32_768
    path.write_text('{"tiny-7b": {"context_window": "big"}}')
    with pytest.raises(ValueError, match="context_window must be a positive integer"):
        load_models(env)


def test_cost_prices_input_and_output_per_million_tokens():
    prices = {"m": Price(input=2.0, output=10.0, cache_read=0.5, cache_write=2.5)}
    assert cost_usd("m", Usage(input_tokens=500_000, output_tokens=100_000), prices) == pytest.approx(2.0)


def test_cost_prices_cache_reads_and_writes_apart_from_uncached_input():
    prices = {"m": Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)}
    usage = Usage(input_tokens=1_300_000, output_tokens=0, cache_read_tokens=1_000_000, cache_write_tokens=200_000)
    # 100k uncached * 3 + 1M read * 0.3 + 200k write * 3.75
    assert cost_usd("m", usage, prices) == pytest.approx(0.3 + 0.3 + 0.75)


def test_cost_of_claude_sonnet_with_a_cache_hit_uses_the_builtin_row():
    usage = Usage(input_tokens=10_000, output_tokens=1_000, cache_read_tokens=9_000)
    assert cost_usd("claude-sonnet-4-20250514", usage, BUILTIN_PRICES) == pytest.approx(
        (1_000 * 3.0 + 9_000 * 0.3 + 1_000 * 15.0) / 1e6
    )


def test_load_prices_without_a_file_is_the_builtin_table():
    assert load_prices(ModelTableSettings()) == BUILTIN_PRICES
    assert load_prices(ModelTableSettings()) is not BUILTIN_PRICES


def test_load_prices_merges_the_user_file_over_the_builtins(tmp_path: Path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({
        "gpt-4o": {"input": 1.0, "output": 2.0, "cache_read": 0.1, "cache_write": 1.25},
        "my-model": {"input": 4, "output": 8},
    }))
    prices = load_prices(ModelTableSettings(prices_file=path))
    assert prices["gpt-4o"] == Price(1.0, 2.0, 0.1, 1.25)
    assert prices["my-model"] == Price(4.0, 8.0, 4.0, 4.0)
    assert prices["claude-sonnet-4"] == BUILTIN_PRICES["claude-sonnet-4"]
    assert find_price("gpt-4o-2024-08-06", prices) == Price(1.0, 2.0, 0.1, 1.25)
    assert cost_usd("my-model-v2", Usage(input_tokens=10**6), prices) == pytest.approx(4.0)


@pytest.mark.parametrize(
    "content",
    ["{not json", "[]", '{"m": 3}', '{"m": {"input": 1}}', '{"m": {"input": 1, "output": -2}}',
     '{"m": {"input": 1, "output": 2, "cached": 1}}', '{"m": {"input": true, "output": 2}}',
     '{"m": {"input": NaN, "output": 2}}', '{"m": {"input": 1, "output": Infinity}}', b"\xff\xfe{".decode("latin-1")],
)
def test_load_prices_rejects_a_malformed_file_naming_it(tmp_path: Path, content: str):
    path = tmp_path / "prices.json"
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(ValueError, match="^AGENT_PRICES_FILE=.*prices.json"):
        load_prices(ModelTableSettings(prices_file=path))


def test_load_prices_rejects_a_missing_file(tmp_path: Path):
    with pytest.raises(ValueError, match="AGENT_PRICES_FILE"):
        load_prices(ModelTableSettings(prices_file=tmp_path / "nope.json"))


def test_a_match_is_kept_per_table_and_found_again_when_the_table_changes():
    table = {"llama-3": Price(1.0, 2.0, 0.0, 0.0)}
    assert find_price("llama-3-70b-q4", table) is table["llama-3"]
    assert find_price("llama-3-70b-q4", table) is table["llama-3"]  # kept
    table["llama-3-70b"] = Price(3.0, 4.0, 0.0, 0.0)  # a longer prefix: the table changed
    assert find_price("llama-3-70b-q4", table) is table["llama-3-70b"]
    table["llama-3-70b"] = Price(5.0, 6.0, 0.0, 0.0)  # the row replaced: its new price
    assert find_price("llama-3-70b-q4", table).input == 5.0  # type: ignore[union-attr]
    other = {"llama": Price(7.0, 8.0, 0.0, 0.0)}  # another table, another answer
    assert find_price("llama-3-70b-q4", other) is other["llama"]
    assert find_price("mistral", table) is None and find_price("mistral", table) is None
