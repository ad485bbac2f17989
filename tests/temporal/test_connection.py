"""Where to connect, as Temporal's tools decide it: the options over TEMPORAL_* over the
envconfig profile; the embedded server only when none names an address."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.settings import TemporalSettings
from temporal.connection import as_arguments, connect_config, resolve


@pytest.fixture
def profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "temporal.toml"
    path.write_text('[profile.default]\nnamespace = "home"\n\n'
                    '[profile.prod]\naddress = "prod.example:7233"\nnamespace = "agents"\n')
    return path


def test_a_profile_with_an_address_is_not_the_embedded_server(profiles):
    settings = resolve(TemporalSettings(config_file=profiles, profile="prod"))
    assert not settings.embedded and (settings.address, settings.namespace) == ("prod.example:7233", "agents")
    assert connect_config(settings)["target_host"] == "prod.example:7233"


def test_the_options_win_over_the_variables_and_the_profile(profiles):
    from_env = TemporalSettings(config_file=profiles, address="env.example:7233", profile="prod")
    assert resolve(from_env).address == "env.example:7233"
    settings = resolve(from_env, {"address": "flag.example:7233", "namespace": "mine"})
    assert (settings.address, settings.namespace) == ("flag.example:7233", "mine")
    assert as_arguments(settings) == ["--address", "flag.example:7233", "--namespace", "mine", "--profile", "prod"]


def test_no_address_anywhere_is_the_embedded_server_with_the_profiles_namespace(profiles):
    settings = resolve(TemporalSettings(config_file=profiles, embedded_port=17999))
    assert settings.embedded and settings.namespace == "home"
    assert connect_config(settings) == {"target_host": "127.0.0.1:17999", "namespace": "home"}


def test_a_profile_that_is_not_there_is_one_line_naming_it(profiles):
    with pytest.raises(ValueError, match="^Temporal profile staging: .*staging"):
        resolve(TemporalSettings(config_file=profiles), {"profile": "staging"})
