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


def test_the_embedded_server_is_used_when_no_address_is_set():
    assert not is_embedded(TemporalSettings.from_env({"TEMPORAL_ADDRESS": "prod.tmprl.cloud:7233"}))
    assert is_embedded(TemporalSettings.from_env({"TEMPORAL_ADDRESS": " "}))
    assert is_embedded(TemporalSettings.from_env({}))
