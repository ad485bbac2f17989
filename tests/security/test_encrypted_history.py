"""With a codec configured, payloads at rest in Temporal are ciphertext; clients with the
key (the CLI, the codec server for the UI) still read them."""

from __future__ import annotations

import json
import urllib.request

from temporalio.client import Client

from contracts.task import TaskState
from core.settings import ProviderSettings
from fakes.scripted import ScriptedModelServer, tool
from temporal.codec import EncryptionCodec, data_converter, generate_key
from temporal.codec_server import make_server
from tests import configured
from tests.workflows.harness import make_input, outcome_of
from worker import build_worker
from workflows.task import AgentTaskWorkflow


async def test_history_is_ciphertext_and_the_codec_server_decodes_it(client, task_queue, workspace):
    codec = EncryptionCodec.from_spec(f"k1:{generate_key()}")
    secure = await Client.connect(client.service_client.config.target_host, data_converter=data_converter(codec))
    steps = [tool("shell", command="echo plaintext-marker-123"), tool("message", type="result", text="visible result")]
    with ScriptedModelServer(steps) as model:
        async with build_worker(secure, queue=task_queue, settings=ProviderSettings(openai_base_url=model.url),
                                config=configured.settings()):
            handle = await secure.start_workflow(
                AgentTaskWorkflow.run, make_input(workspace, "encrypted instruction"), id=f"enc-{task_queue}", task_queue=task_queue
            )
            outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE and outcome.final_text == "visible result"
    history = await handle.fetch_history()
    raw = b"".join(e.SerializeToString() for e in history.events)
    for plaintext in (b"encrypted instruction", b"plaintext-marker-123", b"visible result"):
        assert plaintext not in raw
    assert b"binary/encrypted" in raw

    server = make_server(codec, "tok123", port=0)
    import threading

    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        completed = [e for e in history.events if e.HasField("workflow_execution_completed_event_attributes")][0]
        payloads = completed.workflow_execution_completed_event_attributes.result
        from google.protobuf import json_format

        body = json.dumps({"payloads": json.loads(json_format.MessageToJson(payloads))["payloads"]}).encode()
        port = server.server_address[1]
        request = urllib.request.Request(f"http://127.0.0.1:{port}/tok123/decode", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        decoded = json.loads(urllib.request.urlopen(request).read())
    finally:
        server.shutdown()
    import base64

    data = base64.b64decode(decoded["payloads"][0]["data"])
    assert b"visible result" in data
