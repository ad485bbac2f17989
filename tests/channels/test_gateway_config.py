"""The gateway's channels file and adapters: secrets named not written, one clear line for what
is wrong or missing."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

from channels.config import ChannelConfig, load_channels
from channels.gateway import Defaults, Gateway, build_adapter
from channels.webhook import WebhookAdapter
from contracts.attachments import Attachment
from contracts.channels import ChatRef, InboundMessage, conversation_id
from runtime.secrets import SecretStore

TABLE = """
[matrix]
homeserver = "http://127.0.0.1:8008"
user_id = "@agent:localhost"
password = "{{secret:MATRIX_PASSWORD}}"
allowed_users = ["@alice:localhost", "@bob:localhost"]
approvers = ["@alice:localhost"]

[ops]
type = "webhook"
secret = "plain-secret"
allowed_users = ["ci"]
"""


def test_a_channels_file_fills_in_named_secrets_and_types_default_to_the_table_name(tmp_path: Path):
    path = tmp_path / "channels.toml"
    path.write_text(TABLE)
    matrix, ops = load_channels(path, SecretStore({"MATRIX_PASSWORD": "hunter2-long"}))
    assert (matrix.name, matrix.type, matrix.get("password")) == ("matrix", "matrix", "hunter2-long")
    assert (ops.name, ops.type) == ("ops", "webhook")
    assert matrix.allows("@bob:localhost") and not matrix.allows("@mallory:localhost")
    assert matrix.approvers == ["@alice:localhost"]


@pytest.mark.parametrize(("text", "says"), [
    (TABLE, "names a secret that is not set"),
    ("[matrix\n", "cannot read"),
    ("", "names no channel"),
    ("matrix = 3", "is not a table"),
    ("[matrix]\nallowed_users = 'alice'", "[matrix]"),
])
def test_a_bad_channels_file_is_one_line_naming_the_problem(tmp_path: Path, text: str, says: str):
    path = tmp_path / "channels.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        load_channels(path, SecretStore())
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_channel_whose_library_is_missing_is_one_line_saying_what_to_install(tmp_path, monkeypatch):
    path = tmp_path / "channels.toml"
    path.write_text(TABLE)
    matrix, _ = load_channels(path, SecretStore({"MATRIX_PASSWORD": "hunter2-long"}))
    monkeypatch.setitem(sys.modules, "nio", None)  # as if matrix-nio were not installed
    monkeypatch.delitem(sys.modules, "channels.matrix", raising=False)
    said = build_adapter(matrix, tmp_path)
    assert isinstance(said, str) and "matrix-nio is not installed" in said and "pip install" in said


def test_a_channel_of_an_unknown_type_says_so(tmp_path):
    path = tmp_path / "channels.toml"
    path.write_text('[irc]\nallowed_users = ["x"]\n')
    (irc,) = load_channels(path, SecretStore())
    assert build_adapter(irc, tmp_path) == "channel [irc]: no adapter for type 'irc'"


async def test_a_message_with_more_attachments_than_one_payload_holds_is_handed_over_with_what_fits(
        client, task_queue, tmp_path: Path):
    """Three images of 900 KB would make a 3.6 MB signal, which Temporal refuses (and the gateway
    would offer the message again forever): the first goes with its bytes, the others by name."""
    config = ChannelConfig.model_validate(dict(name="hooks", type="webhook", secret="s" * 16, allowed_users=["ci"]))
    data = base64.b64encode(b"\x89PNG" + b"\0" * 900_000).decode()
    message = InboundMessage(event_id="big-1", chat=ChatRef(channel="hooks", conversation=f"big-{task_queue}"),
                             author="ci", text="look", attachments=[
                                 Attachment(kind="image", name=f"shot{n}.png", data_b64=data) for n in range(3)])
    defaults = Defaults(model="m", provider="openai", task_queue=task_queue, data_dir=tmp_path)
    await Gateway(client, [(config, WebhookAdapter(config))], defaults, queue=f"{task_queue}-gw").inbound(message)
    history = await client.get_workflow_handle(conversation_id(message.chat)).fetch_history()
    [signalled] = [e.workflow_execution_signaled_event_attributes for e in history.events
                   if e.HasField("workflow_execution_signaled_event_attributes")]
    arrived = json.loads(signalled.input.payloads[0].data)["attachments"]
    assert [a["data_b64"] is not None for a in arrived] == [True, False, False]
    assert [a["size"] for a in arrived[1:]] == [900_004, 900_004]
