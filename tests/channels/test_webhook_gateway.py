"""The webhook channel through the gateway: signed calls in, signed callbacks out, a replayed or
unsigned call refused, the same event id twice handled once."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from channels.config import ChannelConfig
from channels.webhook import WebhookAdapter, signature_problem, signed_headers
from cli.gateway import Defaults, Gateway
from fakes.scripted import tool
from tests.workflows.harness import scripted_worker, wait_until

SECRET = "webhook-secret-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Callbacks:
    """A local HTTP server that records the agent's signed callbacks."""

    def __init__(self) -> None:
        self.received: list[tuple[dict, dict]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.received.append((dict(self.headers), json.loads(body)))
                assert signature_problem(SECRET, dict(self.headers.items()), body) is None
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps({"id": f"msg-{len(outer.received)}"}).encode())

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def post(url: str, event: dict, *, secret: str = SECRET, now: float | None = None) -> httpx.Response:
    body = json.dumps(event).encode()
    return httpx.post(url, content=body, headers=signed_headers(secret, body, now))


async def test_a_signed_webhook_call_gets_one_signed_answer_and_bad_calls_are_refused(
    client, task_queue, workspace, tmp_path
):
    callbacks, port = Callbacks(), free_port()
    table = ChannelConfig.model_validate(dict(
        name="hooks", type="webhook", secret=SECRET, port=port, callback_url=callbacks.url, allowed_users=["ci-bot"],
        workspace=str(workspace)))
    adapter = WebhookAdapter(table)
    defaults = Defaults(model="scripted-model", provider="openai", task_queue=task_queue, data_dir=tmp_path)
    url = f"http://127.0.0.1:{port}/"
    event = {"id": "evt-1", "conversation": "build-42", "author": "ci-bot", "text": "summarize the build"}
    async with scripted_worker(client, task_queue, [tool("message", type="result", text="all green")]) as model:
        running = asyncio.create_task(Gateway(client, [(table, adapter)], defaults, queue=f"{task_queue}-gw").run())
        try:
            await wait_until(lambda: adapter.server is not None and adapter.server.started, 30)
            refused = await asyncio.to_thread(post, url, event, secret="wrong")
            stale = await asyncio.to_thread(post, url, event, now=time.time() - 3600)
            stranger = await asyncio.to_thread(post, url, {**event, "id": "evt-0", "author": "someone"})
            assert (refused.status_code, stale.status_code, stranger.status_code) == (401, 401, 403)
            first = await asyncio.to_thread(post, url, event)
            again = await asyncio.to_thread(post, url, event)  # the caller retried: the same event
            assert first.status_code == again.status_code == 202
            await wait_until(lambda: any(body["kind"] == "answer" for _, body in callbacks.received), 60)
            await asyncio.sleep(2)
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            callbacks.server.shutdown()
    answers = [(headers, body) for headers, body in callbacks.received if body["kind"] == "answer"]
    assert len(answers) == 1 and answers[0][1]["text"] == "all green"
    assert answers[0][1]["chat"]["conversation"] == "build-42"
    assert answers[0][0]["Idempotency-Key"] == answers[0][1]["key"]
    assert len(model.requests) == 1
    model.assert_consumed()
