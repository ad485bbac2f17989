"""The model table: matching model names, the user's files, the reply's budget and the cost of a call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.messages import Usage
from core.settings import ModelTableSettings
from providers.model_table import (
    BUILTIN_MODELS,
    DEFAULT_WINDOW,
    FALLBACK_PRICE,
    ModelRow,
    Price,
    context_window,
    cost_usd,
    find_price,
    find_row,
    knows_window,
    load_models,
    reply_budget,
)


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
def test_find_row_matches_exactly_then_by_longest_prefix(model: str, row: str):
    assert find_row(model, BUILTIN_MODELS) is BUILTIN_MODELS[row]


@pytest.mark.parametrize("model", ["gpt-4o1", "claude", "llama-3-70b", ""])
def test_find_row_needs_a_separator_after_the_prefix(model: str):
    assert find_row(model, BUILTIN_MODELS) is None


def test_an_unknown_model_is_priced_at_the_fallback_so_cost_limits_still_apply():
    usage = Usage(input_tokens=10**6, output_tokens=10**6)
    assert cost_usd("my-local-model", usage, BUILTIN_MODELS) == pytest.approx(
        FALLBACK_PRICE.input + FALLBACK_PRICE.output)
    free = {**BUILTIN_MODELS, "*": ModelRow(price=Price(0.0, 0.0, 0.0, 0.0))}  # "this server costs nothing"
    assert cost_usd("my-local-model", usage, free) == 0.0
    assert cost_usd("demo-scripted", usage, BUILTIN_MODELS) == 0.0  # the offline demo is free


def test_the_models_file_gives_limits_and_prices(tmp_path):
    path = tmp_path / "models.json"
    path.write_text('{"tiny-7b": {"context_window": 4096, "max_output": 1024, "input": 0.5, "output": 1.5}}')
    env = ModelTableSettings.from_env({"AGENT_MODELS_FILE": str(path)})
    models = load_models(env)
    assert find_row("tiny-7b-q4", models) == ModelRow(4096, 1024, False, Price(0.5, 1.5, 0.5, 0.5))
    assert reply_budget("tiny-7b", models, 4096, 3500) == 596 and reply_budget("tiny-7b", models, 4096, 100) == 1024
    assert context_window("unheard-of", BUILTIN_MODELS) == DEFAULT_WINDOW == 32_768
    path.write_text('{"tiny-7b": {"context_window": "big"}}')
    with pytest.raises(ValueError, match="context_window must be a positive integer"):
        load_models(env)


def test_cost_prices_input_and_output_per_million_tokens():
    prices = {"m": ModelRow(price=Price(input=2.0, output=10.0, cache_read=0.5, cache_write=2.5))}
    assert cost_usd("m", Usage(input_tokens=500_000, output_tokens=100_000), prices) == pytest.approx(2.0)


def test_cost_prices_cache_reads_and_writes_apart_from_uncached_input():
    prices = {"m": ModelRow(price=Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75))}
    usage = Usage(input_tokens=1_300_000, output_tokens=0, cache_read_tokens=1_000_000, cache_write_tokens=200_000)
    # 100k uncached * 3 + 1M read * 0.3 + 200k write * 3.75
    assert cost_usd("m", usage, prices) == pytest.approx(0.3 + 0.3 + 0.75)


def test_cost_of_claude_sonnet_with_a_cache_hit_uses_the_builtin_row():
    usage = Usage(input_tokens=10_000, output_tokens=1_000, cache_read_tokens=9_000)
    assert cost_usd("claude-sonnet-4-20250514", usage, BUILTIN_MODELS) == pytest.approx(
        (1_000 * 3.0 + 9_000 * 0.3 + 1_000 * 15.0) / 1e6
    )


def test_load_models_without_a_file_is_the_builtin_table():
    assert load_models(ModelTableSettings()) == BUILTIN_MODELS
    assert load_models(ModelTableSettings()) is not BUILTIN_MODELS


def test_load_prices_merges_the_user_file_over_the_builtins(tmp_path: Path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({
        "gpt-4o": {"input": 1.0, "output": 2.0, "cache_read": 0.1, "cache_write": 1.25},
        "my-model": {"input": 4, "output": 8},
    }))
    models = load_models(ModelTableSettings(prices_file=path))
    assert models["gpt-4o"] == ModelRow(128_000, 16_384, True, Price(1.0, 2.0, 0.1, 1.25))  # the limits kept
    assert models["my-model"].price == Price(4.0, 8.0, 4.0, 4.0)
    assert models["claude-sonnet-4"] == BUILTIN_MODELS["claude-sonnet-4"]
    assert find_price("gpt-4o-2024-08-06", models) == Price(1.0, 2.0, 0.1, 1.25)
    assert cost_usd("my-model-v2", Usage(input_tokens=10**6), models) == pytest.approx(4.0)
    # A model priced but not sized: the default window, or what its server says (llm_setup).
    assert not knows_window("my-model", models) and context_window("my-model", models) == DEFAULT_WINDOW
    assert knows_window("gpt-4o", models)


@pytest.mark.parametrize(
    "content",
    ["{not json", "[]", '{"m": 3}', '{"m": {"input": 1}}', '{"m": {"input": 1, "output": -2}}',
     '{"m": {"input": 1, "output": 2, "cached": 1}}', '{"m": {"input": true, "output": 2}}',
     '{"m": {"input": NaN, "output": 2}}', '{"m": {"input": 1, "output": Infinity}}', b"\xff\xfe{".decode("latin-1")],
)
def test_load_models_rejects_a_malformed_prices_file_naming_it(tmp_path: Path, content: str):
    path = tmp_path / "prices.json"
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(ValueError, match="^AGENT_PRICES_FILE=.*prices.json"):
        load_models(ModelTableSettings(prices_file=path))


def test_load_models_rejects_a_missing_file_in_one_line(tmp_path: Path):
    with pytest.raises(ValueError, match="^AGENT_PRICES_FILE=[^\n]*$"):
        load_models(ModelTableSettings(prices_file=tmp_path / "nope.json"))
    with pytest.raises(ValueError, match="^AGENT_MODELS_FILE=[^\n]*$"):
        load_models(ModelTableSettings(models_file=tmp_path / "nope.json"))


def test_a_match_is_kept_per_table_and_found_again_when_the_table_changes():
    table = {"llama-3": ModelRow(1000)}
    assert find_row("llama-3-70b-q4", table) is table["llama-3"]
    assert find_row("llama-3-70b-q4", table) is table["llama-3"]  # kept
    table["llama-3-70b"] = ModelRow(3000)  # a longer prefix: the table changed
    assert find_row("llama-3-70b-q4", table) is table["llama-3-70b"]
    table["llama-3-70b"] = ModelRow(5000)  # the row replaced: its new window
    assert context_window("llama-3-70b-q4", table) == 5000
    other = {"llama": ModelRow(7000)}  # another table, another answer
    assert find_row("llama-3-70b-q4", other) is other["llama"]
    assert find_row("mistral", table) is None and find_row("mistral", table) is None
