"""One data-directory rule (issue 40): ``AGENT_DATA_DIR``, else ``$XDG_DATA_HOME/durable-agent``,
whatever copy of the code runs and from wherever; always absolute, so a process started
elsewhere is handed the same one."""

from __future__ import annotations

from pathlib import Path

from core.settings import PathSettings
from runtime.paths import APP_NAME, data_dir


def test_data_dir_is_under_xdg_data_home_for_a_checkout_too(tmp_path):
    assert data_dir(PathSettings(xdg_data_home=tmp_path)) == tmp_path / APP_NAME


def test_data_dir_defaults_to_the_home_directory_s_local_share(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert data_dir(PathSettings()) == tmp_path / ".local" / "share" / APP_NAME


def test_agent_data_dir_wins_and_a_relative_one_is_made_absolute_from_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert data_dir(PathSettings(data_dir=Path("mine"), xdg_data_home=tmp_path / "xdg")) == tmp_path / "mine"
    assert (tmp_path / "mine").is_dir() and not (tmp_path / "xdg").exists()


def test_data_dir_does_not_depend_on_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path.parent)
    assert data_dir(PathSettings(xdg_data_home=tmp_path / "xdg")) == tmp_path / "xdg" / APP_NAME
