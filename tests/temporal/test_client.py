"""Links to the Temporal UI point where the UI is."""

from __future__ import annotations

import pytest

from temporal.client import ui_base_url


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
def test_the_ui_link_follows_the_configured_ui_then_a_local_address(monkeypatch, env, expected):
    for name in ("TEMPORAL_UI_URL", "TEMPORAL_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert ui_base_url() == expected
