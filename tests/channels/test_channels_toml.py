"""Matrix, Slack and Telegram tables in ``channels.toml``: tokens named as secrets, never written in the
file; a table that lacks what its mode needs, or has a key no adapter reads, is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from channels.config import load_channels
from channels.gateway import build_adapter
from channels.matrix import MatrixAdapter
from channels.slack import SlackAdapter
from channels.telegram import TelegramAdapter
from runtime.secrets import SecretStore

SECRETS = SecretStore({"SLACK_BOT_TOKEN": "xoxb-1234567890-abcdef", "SLACK_SIGNING_SECRET": "8f742231b10e8888abcd",
                       "TELEGRAM_BOT_TOKEN": "7000001:AAE-abcdefghijkl"})

FILE = """
[slack]
bot_token = "{{secret:SLACK_BOT_TOKEN}}"
signing_secret = "{{secret:SLACK_SIGNING_SECRET}}"
port = 3000
allowed_users = ["U024BE7LH", "U0G9QF9C6"]
approvers = ["U024BE7LH"]

[telegram]
bot_token = "{{secret:TELEGRAM_BOT_TOKEN}}"
allowed_users = ["123456789"]
approvers = ["123456789"]
"""


MATRIX = '[matrix]\nhomeserver = "http://127.0.0.1:8008"\nuser_id = "@agent:localhost"\npassword = "pw"\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "channels.toml"
    path.write_text(text)
    return path


def test_slack_and_telegram_tables_build_their_adapters_with_the_secrets_filled_in(tmp_path):
    slack, telegram = (build_adapter(c, tmp_path) for c in load_channels(write(tmp_path, FILE), SECRETS))
    assert isinstance(slack, SlackAdapter) and isinstance(telegram, TelegramAdapter)
    assert slack.settings.bot_token == "xoxb-1234567890-abcdef" and slack.settings.mode == "events"
    assert slack.config.approvers == ["U024BE7LH"]
    assert telegram.settings.bot_token == "7000001:AAE-abcdefghijkl" and telegram.settings.mode == "polling"


def test_a_matrix_table_builds_its_adapter_from_typed_settings(tmp_path):
    [config] = load_channels(write(tmp_path, MATRIX + 'device_id = "GATEWAY"\nworkspace = "/tmp/ws"\n'), SECRETS)
    matrix = build_adapter(config, tmp_path)
    assert isinstance(matrix, MatrixAdapter)
    assert (matrix.settings.homeserver, matrix.settings.password, matrix.settings.device_id) == (
        "http://127.0.0.1:8008", "pw", "GATEWAY")
    assert config.workspace == "/tmp/ws"  # a key every table has, not the platform's


@pytest.mark.parametrize("table, refusal", [
    ('[slack]\nbot_token = "xoxb-1"\nmode = "socket"\n', r"\[slack\]: Socket Mode needs app_token"),
    ('[telegram]\nbot_token = "1:a"\nmode = "webhook"\n', r"\[telegram\]: webhook mode needs webhook_secret"),
    ('[telegram]\nbot_token = "1:a"\npoll_timeout = 5\n', r"\[telegram\]: poll_timeout: Extra inputs"),
    ('[slack]\nsigning_secret = "s"\n', r"\[slack\]: bot_token: Field required"),
    (f'{MATRIX}homeserver_url = "http://127.0.0.1:8008"\n', r"^channel \[matrix\]: homeserver_url: Extra inputs"),
    (f'{MATRIX}device_id = 7\n', r"^channel \[matrix\]: device_id: Input should be a valid string"),
    ('[matrix]\nhomeserver = "http://127.0.0.1:8008"\npassword = "pw"\n', r"\[matrix\]: user_id: Field required"),
    ('[matrix]\nhomeserver = "http://127.0.0.1:8008"\nuser_id = "@agent:localhost"\n',
     r"\[matrix\]: logging in needs password or access_token"),
])
def test_a_table_missing_what_its_mode_needs_or_with_a_stray_key_is_refused_by_name(tmp_path, table, refusal):
    [config] = load_channels(write(tmp_path, table), SECRETS)
    with pytest.raises(ValueError, match=refusal) as err:
        build_adapter(config, tmp_path)
    assert "\n" not in str(err.value)
