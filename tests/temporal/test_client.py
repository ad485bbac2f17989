"""Links to the Temporal UI point where the UI is."""

from __future__ import annotations

import pytest

from core.settings import TemporalSettings
from temporal.client import is_embedded, ui_base_url


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"TEMPORAL_UI_URL": "https://ui.example/"}, "https://ui.example"),
        ({"TEMPORAL_ADDRESS": "127.0.0.1:7233"}, "http://127.0.0.1:8233"),
        ({"TEMPORAL_ADDRESS": "localhost:7234"}, "http://localhost:8233"),
        ({"TEMPORAL_ADDRESS": "prod.tmprl.cloud:7233"}, "https://cloud.temporal.io"),
        ({"TEMPORAL_ADDRESS": "127.0.0.1:7233", "TEMPORAL_UI_URL": "http://ui:8080"}, "http://ui:8080"),
        ({}, "http://127.0.0.1:8233"),  # the embedded server
    ],
)
def test_the_ui_link_follows_the_configured_ui_then_a_local_address(env, expected):
    assert ui_base_url(TemporalSettings.from_env(env)) == expected


def test_callers_without_settings_read_the_process_environment(monkeypatch):
    # The CLI does until it is handed its settings (issue 29, second pass).
    monkeypatch.setenv("TEMPORAL_ADDRESS", "prod.tmprl.cloud:7233")
    monkeypatch.delenv("TEMPORAL_UI_URL", raising=False)
    assert ui_base_url() == "https://cloud.temporal.io" and not is_embedded()
    monkeypatch.delenv("TEMPORAL_ADDRESS")
    assert ui_base_url() == "http://127.0.0.1:8233" and is_embedded()
