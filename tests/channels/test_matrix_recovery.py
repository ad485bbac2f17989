"""The Matrix gateway when its homeserver forgets it (issue 41): a homeserver reset at the same
address refuses the saved login, and the gateway logs in again with its password, syncs from
now and answers, logging the refusal once rather than failing in a loop; a table with only a
token stops its channel with one line instead."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.channels.synapse import PASSWORDS, Synapse, require_synapse

require_synapse()
pytest.importorskip("nio", reason="matrix-nio is not installed: pip install 'durable-agent[channels]'")

from channels import matrix_session  # noqa: E402
from channels.config import ChannelConfig  # noqa: E402
from channels.matrix import MatrixAdapter  # noqa: E402
from fakes.scripted import tool  # noqa: E402
from tests.channels.tables import Inbox  # noqa: E402
from tests.channels.test_matrix_gateway import gateway, matrix_table, person  # noqa: E402
from tests.workflows.harness import scripted_worker  # noqa: E402

AGENT = "@agent:localhost"


async def homeserver(directory: Path, port: int | None = None) -> Synapse:
    """A started Synapse with the test's people, started off the event loop the gateway runs on."""
    def start() -> Synapse:
        server = Synapse(directory, port).start()
        for name, password in PASSWORDS.items():
            server.register(name, password)
        return server
    return await asyncio.to_thread(start)


def about_the_token(logs: Sequence[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if "token" in e["event"] or "M_UNKNOWN_TOKEN" in str(e.get("error", ""))]


async def _talk(server, text: str, answer: str, when: str) -> None:
    """Alice opens a room with the agent on ``server``, says ``text`` and waits for ``answer``."""
    alice = await person(server, "alice")
    room = await alice.create_room(invite=[AGENT])
    await alice.until(lambda: alice.joined(room, AGENT), f"the agent to join {when}")
    await alice.say(room, text)
    await alice.until(lambda: answer in alice.bodies(room, AGENT), f"the answer {when}")
    await alice.close()


async def test_a_reset_homeserver_is_logged_in_to_again_and_the_next_message_answered(
    client, task_queue, workspace, tmp_path, monkeypatch, caplog
):
    monkeypatch.setattr(matrix_session, "PAUSE_MAX_S", 2.0)  # the outage below is tried again often enough
    servers = [await homeserver(tmp_path / "first")]
    steps = [tool("message", type="result", text="hello before"), tool("message", type="result", text="hello again")]
    table = matrix_table(servers[0], workspace=str(workspace))
    try:
        with capture_logs() as logs, caplog.at_level(logging.WARNING, logger="nio"):
            async with scripted_worker(client, task_queue, steps) as model, \
                    gateway(client, task_queue, table, tmp_path):
                await _talk(servers[0], "hi", "hello before", "before the reset")
                await asyncio.to_thread(servers[0].stop)  # reset: a fresh database at the same address
                servers.append(await homeserver(tmp_path / "second", port=servers[0].port))
                await _talk(servers[1], "are you back?", "hello again", "after the reset")
                model.assert_consumed()
    finally:
        for server in servers:
            await asyncio.to_thread(server.stop)
    [refused] = about_the_token(logs)
    assert refused["event"].startswith("matrix refused the access token; logging in again") and \
        "M_UNKNOWN_TOKEN" in refused["error"]
    failures = [e for e in logs if e["log_level"] == "warning" and e is not refused]
    assert len(failures) <= 4, failures  # the outage and the login: once per kind of error, not once per try
    assert not [r.getMessage() for r in caplog.records if r.name.startswith("nio")]  # reported by the adapter


async def test_a_refused_token_without_a_password_stops_the_channel_with_one_line(tmp_path, synapse):
    table = ChannelConfig.model_validate(dict(name="matrix", type="matrix", homeserver=synapse.url, user_id=AGENT,
                                              access_token="syt_not_a_token_here", allowed_users=["@alice:localhost"]))
    adapter = MatrixAdapter(table, tmp_path)
    try:
        with capture_logs() as logs:
            await asyncio.wait_for(adapter.receive(Inbox()), 60)  # returns: the channel stopped
    finally:
        await adapter.close()
    [line] = [e for e in logs if e["log_level"] in ("warning", "error")]
    assert line["log_level"] == "error" and "no password" in line["event"] and "M_UNKNOWN_TOKEN" in line["error"]
