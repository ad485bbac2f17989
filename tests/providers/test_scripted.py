"""ScriptedModelServer over real HTTP, checked with a plain httpx client and raw sockets."""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import Any

import httpx
import pytest

from fakes.scripted import ScriptedModelServer, demo_steps, error, text, tool
from fakes.step import Step

CHAT = "/chat/completions"
HI = [{"role": "user", "content": "hi"}]  # strict mode refuses an empty message list, as OpenAI does


def post(server: ScriptedModelServer, body: dict[str, Any] | None = None) -> httpx.Response:
    payload = body if body is not None else {"model": "m", "messages": HI}
    return httpx.post(server.url + CHAT, json=payload, timeout=5.0)


def events(response: httpx.Response) -> list[str]:
    return [line[len("data: "):] for line in response.text.splitlines() if line.startswith("data: ")]


def wait_for(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


class Background:
    """One request running in a thread, so a test can watch it block."""

    def __init__(self, server: ScriptedModelServer, **kwargs: Any) -> None:
        self.response: httpx.Response | None = None
        self.error: Exception | None = None
        self.thread = threading.Thread(target=self._run, args=(server,), kwargs=kwargs, daemon=True)
        self.thread.start()

    def _run(self, server: ScriptedModelServer, **kwargs: Any) -> None:
        try:
            self.response = post(server, **kwargs)
        except Exception as exc:  # the test inspects it
            self.error = exc


def test_server_answers_script_steps_in_order_and_records_requests():
    with ScriptedModelServer([text("first"), tool("shell", command="ls")]) as server:
        one = post(server, {"model": "m", "messages": [{"role": "user", "content": "1"}]}).json()
        two = post(server, {"model": "m", "messages": [{"role": "user", "content": "2"}]}).json()
        server.assert_consumed()
    assert one["object"] == "chat.completion"
    assert one["choices"][0]["message"]["content"] == "first"
    assert one["choices"][0]["finish_reason"] == "stop"
    call = two["choices"][0]["message"]["tool_calls"][0]
    function = {"name": "shell", "arguments": '{"command": "ls"}'}
    assert call == {"id": "call_2_0", "type": "function", "function": function}
    assert two["choices"][0]["finish_reason"] == "tool_calls"
    assert [r["messages"][0]["content"] for r in server.requests] == ["1", "2"]
    assert server.hits() == 2


def test_server_that_does_not_record_keeps_no_request_but_still_checks_them():
    with ScriptedModelServer([text("first"), text("second")], record=False) as server:
        assert post(server).json()["choices"][0]["message"]["content"] == "first"
        refused = post(server, {"model": "m", "messages": []})  # strict mode still refuses it
        assert post(server).json()["choices"][0]["message"]["content"] == "second"
    assert refused.status_code == 400
    assert server.hits() == 3
    assert (server.requests, server.request_headers, server.request_times) == ([], [], [])
    assert len(server.rejected) == 1


def test_server_records_unexpected_call_and_answers_400():
    with ScriptedModelServer([text("only")]) as server:
        post(server)
        response = post(server)
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "scripted model: unexpected call #2",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    assert server.unexpected == ["scripted model: unexpected call #2"]
    with pytest.raises(AssertionError, match="unexpected call #2"):
        server.assert_consumed()


def test_assert_consumed_fails_when_steps_remain():
    with ScriptedModelServer([text("a"), text("b")]) as server:
        post(server)
    with pytest.raises(AssertionError, match="1 scripted step"):
        server.assert_consumed()


def test_server_add_appends_steps_to_the_script():
    with ScriptedModelServer() as server:
        server.add(text("late"), text("later"))
        contents = [post(server).json()["choices"][0]["message"]["content"] for _ in range(2)]
        server.assert_consumed()
    assert contents == ["late", "later"]


def test_server_answers_404_for_other_paths_without_consuming_steps():
    with ScriptedModelServer([text("a")]) as server:
        assert httpx.post(server.url + "/completions", json={}).status_code == 404
        assert httpx.get(server.url + "/models").status_code == 404
        assert server.hits() == 0
        post(server)
        server.assert_consumed()


def test_server_rejects_invalid_json_as_unexpected():
    with ScriptedModelServer([text("a")]) as server:
        response = httpx.post(server.url + CHAT, content=b"{nope")
        post(server)
    assert response.status_code == 400
    assert "not valid JSON" in server.unexpected[0]


def test_error_step_sends_status_headers_and_body():
    page = "<html>Bad Gateway</html>"
    steps = [error(429, "slow down", {"Retry-After": "2"}), Step(status=502, error_body=page)]
    with ScriptedModelServer(steps) as server:
        limited, gateway = post(server), post(server)
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "2"
    assert limited.json()["error"]["message"] == "slow down"
    assert gateway.status_code == 502
    assert gateway.headers["content-type"].startswith("text/html")
    assert gateway.text == page


def test_json_responses_keep_the_connection_alive_with_content_length():
    with ScriptedModelServer([text("a"), text("b")]) as server:
        host, port = server.url.split("//")[1].split("/")[0].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        bodies = []
        for _ in range(2):  # the same connection serves both
            conn.request("POST", "/v1/chat/completions", body=json.dumps({"model": "m", "messages": HI}))
            response = conn.getresponse()
            raw = response.read()
            assert int(response.getheader("Content-Length")) == len(raw)
            bodies.append(json.loads(raw)["choices"][0]["message"]["content"])
        conn.close()
    assert bodies == ["a", "b"]


def test_stream_chunks_follow_openai_chunk_shape():
    arguments = {"path": "a.txt", "action": "read"}
    step = Step(text="Hello streaming world", reasoning="think", tool_calls=[("file", arguments)])
    body = {"model": "m", "messages": HI, "stream": True, "stream_options": {"include_usage": True}}
    with ScriptedModelServer([step], name="gpt-scripted") as server:
        response = post(server, body)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["connection"] == "close"
    data = events(response)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert {c["model"] for c in chunks} == {"gpt-scripted"}
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    content = [d["content"] for d in deltas if d.get("content")]
    assert len(content) > 1 and "".join(content) == "Hello streaming world"
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "think"
    fragments = [f for d in deltas for f in d.get("tool_calls", [])]
    opening = {"index": 0, "id": "call_1_0", "type": "function"}
    opening["function"] = {"name": "file", "arguments": ""}
    assert fragments[0] == opening
    assert len(fragments) > 2
    assert all(set(f) == {"index", "function"} for f in fragments[1:])
    assert json.loads("".join(f["function"]["arguments"] for f in fragments)) == arguments
    finish, usage = chunks[-2], chunks[-1]
    assert finish["choices"][0]["finish_reason"] == "tool_calls"
    assert usage["choices"] == [] and usage["usage"]["prompt_tokens"] == 10


def test_stream_without_include_usage_sends_no_usage_chunk():
    with ScriptedModelServer([text("hi")]) as server:
        response = post(server, {"model": "m", "messages": HI, "stream": True})
    chunks = [json.loads(d) for d in events(response)[:-1]]
    assert all(c["choices"] for c in chunks)
    assert "usage" not in chunks[-1]


def test_cut_stream_closes_without_finish_reason_or_done():
    with ScriptedModelServer([Step(text="a long answer that gets cut", cut_stream=True)]) as server:
        response = post(server, {"model": "m", "messages": HI, "stream": True})
    data = events(response)
    assert data and "[DONE]" not in data
    assert all(json.loads(d)["choices"][0]["finish_reason"] is None for d in data)


def test_tool_call_ids_are_unique_across_steps_and_raw_arguments_pass_verbatim():
    steps = [Step(tool_calls=[("a", {}), ("b", "{not json")]), tool("c")]
    with ScriptedModelServer(steps) as server:
        first, second = post(server).json(), post(server).json()
    calls = first["choices"][0]["message"]["tool_calls"] + second["choices"][0]["message"]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_1_0", "call_1_1", "call_2_0"]
    assert calls[1]["function"]["arguments"] == "{not json"


def test_delay_step_waits_before_answering():
    with ScriptedModelServer([Step(text="slow", delay_s=0.3)]) as server:
        started = time.monotonic()
        response = post(server)
        elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert elapsed >= 0.3


def test_held_step_blocks_until_release_without_blocking_other_requests():
    with ScriptedModelServer([Step(text="held", hold=True), text("free")]) as server:
        held = Background(server)
        wait_for(lambda: server.hits() == 1)
        assert post(server).json()["choices"][0]["message"]["content"] == "free"
        held.thread.join(0.2)
        assert held.thread.is_alive() and held.response is None
        server.release()
        held.thread.join(5)
        server.assert_consumed()
    assert held.response is not None
    assert held.response.json()["choices"][0]["message"]["content"] == "held"


def test_release_does_not_release_later_held_steps():
    with ScriptedModelServer([Step(hold=True, text="1"), Step(hold=True, text="2")]) as server:
        first = Background(server)
        wait_for(lambda: server.hits() == 1)
        server.release()
        first.thread.join(5)
        second = Background(server)
        wait_for(lambda: server.hits() == 2)
        second.thread.join(0.2)
        assert second.thread.is_alive()
        server.release()
        second.thread.join(5)
    assert first.response is not None and second.response is not None
    assert second.response.json()["choices"][0]["message"]["content"] == "2"


def test_stop_while_held_returns_promptly_and_drops_the_call():
    server = ScriptedModelServer([Step(text="never", hold=True)]).start()
    held = Background(server)
    wait_for(lambda: server.hits() == 1)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 1.0
    held.thread.join(5)
    assert held.response is None and isinstance(held.error, httpx.TransportError)


def test_stopped_server_refuses_connections():
    server = ScriptedModelServer([text("a")]).start()
    url = server.url
    server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.post(url + CHAT, json={}, timeout=2)


def test_demo_steps_list_shell_then_file_write_then_result_message_and_a_check_when_asked():
    steps = demo_steps("Tidy the repo\nand say hi")
    calls = [step.tool_calls[0] for step in steps]
    assert [name for name, _ in calls] == ["shell", "file", "message", "file", "message"]
    assert calls[3] == ("file", {"action": "read", "path": "AGENT_DEMO.md"}) and calls[4] == calls[2]
    assert calls[0][1] == {"command": "ls -la"}
    file_args = calls[1][1]
    assert isinstance(file_args, dict)
    assert (file_args["action"], file_args["path"]) == ("write", "AGENT_DEMO.md")
    assert "> Tidy the repo\n> and say hi" in file_args["content"]
    assert file_args["content"].startswith("# ")
    message_args = calls[2][1]
    assert isinstance(message_args, dict)
    assert message_args["type"] == "result" and message_args["text"]
    assert all(len(step.tool_calls) == 1 for step in steps)
