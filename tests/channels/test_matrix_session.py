"""What the Matrix adapter saves between runs is kept per homeserver and user: a table pointed
at another homeserver finds nothing of the old one's (issue 41)."""

from __future__ import annotations

import pytest

pytest.importorskip("nio", reason="matrix-nio is not installed: pip install 'durable-agent[channels]'")

from channels.matrix import MatrixAdapter  # noqa: E402
from tests.channels.tables import table  # noqa: E402


def matrix(homeserver: str, user_id: str = "@agent:example.org"):
    return table(name="matrix", type="matrix", homeserver=homeserver, user_id=user_id, password="pw")


def test_the_saved_login_and_sync_token_are_kept_per_homeserver_and_user(tmp_path):
    before = MatrixAdapter(matrix("https://old.example.org"), tmp_path)
    before.state.save_login("syt_old", "OLDDEVICE")
    before.state.save_sync_token("s42_7_0")

    moved = MatrixAdapter(matrix("https://new.example.org"), tmp_path)
    other_user = MatrixAdapter(matrix("https://old.example.org", "@other:example.org"), tmp_path)
    restarted = MatrixAdapter(matrix("https://old.example.org/"), tmp_path)

    assert moved.state.login() is None and moved.state.sync_token() is None
    assert other_user.state.login() is None and other_user.state.sync_token() is None
    assert restarted.state.login() == ("syt_old", "OLDDEVICE") and restarted.state.sync_token() == "s42_7_0"
