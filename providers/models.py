"""What a model can take: its context window, its longest reply and whether it takes images, from a table.

``BUILTIN_MODELS`` holds the published limits of well-known models; a JSON file
(``AGENT_MODELS_FILE``) extends or overrides it, and may carry prices too. ``vision`` is
False unless the table says so: an image sent to a text-only model fails the whole call.
Names match as prices do (exactly, then by the longest prefix, then without a "vendor/");
a model in no table gets ``DEFAULT_MODEL`` (a 32K window, until the server's overflow
error names the real one). The file's format and the reasons: docs/providers.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.settings import ModelTableSettings
from providers.pricing import PRICE_FIELDS, lookup

MODELS_FILE_ENV = "AGENT_MODELS_FILE"
DEFAULT_MAX_OUTPUT = 8192
MIN_OUTPUT = 256  # a reply never gets fewer tokens than this, however full the window


@dataclass(frozen=True)
class ModelSpec:
    context_window: int
    max_output: int
    vision: bool = False  # takes images (see the module docstring)


DEFAULT_MODEL = ModelSpec(context_window=32_768, max_output=DEFAULT_MAX_OUTPUT)

BUILTIN_MODELS: dict[str, ModelSpec] = {
    # OpenAI
    "gpt-4o": ModelSpec(128_000, 16_384, vision=True),
    "gpt-4o-mini": ModelSpec(128_000, 16_384, vision=True),
    "gpt-4.1": ModelSpec(1_047_576, 32_768, vision=True),
    "gpt-4.1-mini": ModelSpec(1_047_576, 32_768, vision=True),
    "gpt-4.1-nano": ModelSpec(1_047_576, 32_768, vision=True),
    "o3": ModelSpec(200_000, 100_000, vision=True),
    "o4-mini": ModelSpec(200_000, 100_000, vision=True),
    # Anthropic
    "claude-opus-4": ModelSpec(200_000, 32_000, vision=True),
    "claude-opus-4-1": ModelSpec(200_000, 32_000, vision=True),
    "claude-opus-4-5": ModelSpec(200_000, 64_000, vision=True),
    "claude-opus-4-6": ModelSpec(200_000, 64_000, vision=True),
    "claude-opus-4-7": ModelSpec(200_000, 64_000, vision=True),
    "claude-sonnet-4": ModelSpec(200_000, 64_000, vision=True),
    "claude-3-7-sonnet": ModelSpec(200_000, 64_000, vision=True),
    "claude-haiku-4-5": ModelSpec(200_000, 64_000, vision=True),
    "claude-3-5-haiku": ModelSpec(200_000, 8_192, vision=True),
    # The offline demo and the tests' scripted model
    "demo-scripted": ModelSpec(128_000, 4_096),
    "scripted-model": ModelSpec(128_000, 4_096),
}


def load_models(tables: ModelTableSettings) -> dict[str, ModelSpec]:
    """The built-in table with the user's file (``AGENT_MODELS_FILE``) merged over it; a bad
    file raises ValueError."""
    models = dict(BUILTIN_MODELS)
    if tables.models_file is None:
        return models
    path = str(tables.models_file)
    for model, entry in read_models_file(path).items():
        known = models.get(model, DEFAULT_MODEL)
        window = entry.get("context_window", known.context_window)
        output = entry.get("max_output", known.max_output)
        for key, value in (("context_window", window), ("max_output", output)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{MODELS_FILE_ENV}={path}: {model}: {key} must be a positive integer, got {value!r}")
        vision = entry.get("vision", known.vision)
        if not isinstance(vision, bool):  # "yes", 1, "false": a typo must not decide what is sent
            raise ValueError(f"{MODELS_FILE_ENV}={path}: {model}: vision must be true or false, got {vision!r}")
        models[model] = ModelSpec(context_window=window, max_output=output, vision=vision)
    return models


def read_models_file(path: str) -> dict[str, dict[str, Any]]:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{MODELS_FILE_ENV}={path}: cannot read models: {exc}") from exc
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise ValueError(f"{MODELS_FILE_ENV}={path}: expected a JSON object of models, each an object")
    for model, entry in raw.items():
        unknown = set(entry) - {"context_window", "max_output", "vision", *PRICE_FIELDS}
        if unknown:
            raise ValueError(f"{MODELS_FILE_ENV}={path}: {model}: unknown fields {sorted(unknown)}")
    return raw


def model_spec(model: str, models: Mapping[str, ModelSpec]) -> ModelSpec:
    found = lookup(model, models)
    return found if found is not None else DEFAULT_MODEL


def accepts_images(model: str, models: Mapping[str, ModelSpec]) -> bool:
    """Whether ``model`` takes images, by its row of the table (built in, or the models file's
    ``"vision"``); a model in no table does not."""
    return model_spec(model, models).vision


def reply_budget(spec: ModelSpec, window: int, prompt_tokens: int) -> int:
    """Tokens to ask for the reply: the model's maximum, but never more than the window
    leaves after the prompt (servers such as vLLM refuse prompt + max_tokens > window)."""
    room = window - prompt_tokens
    return max(MIN_OUTPUT, min(spec.max_output, room))
