"""A scripted model behind a real local HTTP server speaking the OpenAI and Anthropic wires.

Tests, benchmarks and the offline demo point an ``OpenAIProvider`` at
``ScriptedModelServer.url`` and the server answers each
``POST /v1/chat/completions`` with the next ``Step`` of its script: a JSON
``chat.completion``, or ``chat.completion.chunk`` events over SSE when the
request asks for ``stream: true``. An ``AnthropicProvider`` pointed at
``ScriptedModelServer.anthropic_url`` gets the same steps from
``POST /v1/messages`` as Anthropic messages or named stream events (rendered by
fakes/scripted_anthropic.py), a ``ResponsesProvider`` on ``url`` from
``POST /v1/responses`` as OpenAI Responses (fakes/scripted_responses.py). A call
beyond the script is recorded in
``unexpected`` and answered 400, so ``assert_consumed()`` catches both a
script that ran short and one that was not used up.

Strict by default: a chat completions request that the strictest real server would
refuse (``content: null``, tools without ``tool_choice``, arguments that are not a JSON
object, a tool message answering no call, ...; fakes/scripted_strict.py) is answered
with that server's error instead of the next step, and recorded in ``rejected``, which
``assert_consumed()`` reports too; the Anthropic and Responses wires have their own
rules (``check`` in their modules). ``strict=False`` turns this off. Images are checked
as the real servers check them (where a role may carry them, the data URL or base64
source, the media type against the bytes); ``multimodal=False`` makes the chat wire a
llama.cpp server without a multimodal projector, which refuses every image.

``requests`` holds every request body received, in order (refused ones too), for tests to
read what was sent; ``record=False`` keeps none of them (nor their headers and times): a
benchmark of thousands of turns, each body carrying the conversation, would hold gigabytes.

A step can also answer with an exact body (``raw``): recorded fixtures, an empty or
truncated 200 answer.

Stdlib only: a ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) in a daemon thread.
"""

from __future__ import annotations

import json
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakes import scripted_anthropic, scripted_chat, scripted_responses, scripted_strict
from fakes.step import Step

CHAT_PATH = "/v1/chat/completions"
MESSAGES_PATH = scripted_anthropic.MESSAGES_PATH
RESPONSES_PATH = scripted_responses.RESPONSES_PATH  # the OpenAI Responses wire (fakes/scripted_responses.py)
# Each wire's strict mode: what the real server refuses, refused here too.
STRICT = {CHAT_PATH: scripted_strict.check, MESSAGES_PATH: scripted_anthropic.check,
          RESPONSES_PATH: scripted_responses.check}


def tool(name: str, **arguments: Any) -> Step:
    return Step(tool_calls=[(name, arguments)])


def text(t: str) -> Step:
    return Step(text=t)


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Step:
    kind = "invalid_request_error"
    if status == 429:
        kind = "rate_limit_error"
    elif status >= 500:
        kind = "server_error"
    return Step(status=status, error_body=scripted_chat.error_body(message, kind), headers=headers or {})


def demo_steps(instruction: str) -> list[Step]:
    """The offline demo: look around, write a note quoting the instruction, report; asked to
    verify (the task wrote a file), read the note back and report again."""
    quoted = "\n".join(f"> {line}" if line else ">" for line in instruction.splitlines() or [""])
    note = (
        "# Agent demo\n\n"
        "This file was written by the durable agent running against a scripted model.\n\n"
        f"## Instruction\n\n{quoted}\n\n"
        "## What happened\n\n"
        "1. Listed the working directory with `ls -la`.\n"
        "2. Wrote this note.\n"
        "3. Reported the result, was asked to check it, read this note back and reported again.\n"
    )
    summary = "Listed the working directory and wrote AGENT_DEMO.md, a short note quoting the instruction."
    pieces, pause = 12, 0.03  # the text arrives as a model's would, a few words at a time
    return [
        Step(
            text="Let me look at the working directory first.",
            tool_calls=[("shell", {"command": "ls -la"})], text_pieces=pieces, frame_delay_s=pause,
        ),
        Step(
            text="Now I'll write a short note about the task.",
            tool_calls=[("file", {"action": "write", "path": "AGENT_DEMO.md", "content": note})],
            text_pieces=pieces, frame_delay_s=pause,
        ),
        tool("message", type="result", text=summary),
        Step(
            text="Reading the note back before finishing.",
            tool_calls=[("file", {"action": "read", "path": "AGENT_DEMO.md"})], text_pieces=pieces, frame_delay_s=pause,
        ),
        tool("message", type="result", text=summary),
    ]


class ScriptedModelServer:
    def __init__(
        self, steps: Sequence[Step] = (), *, name: str = "scripted", strict: bool = True, multimodal: bool = True,
        streams_tools: bool = True, window: int | None = None, record: bool = True,
    ) -> None:
        self.name = name
        self.record = record
        self.strict = strict
        self.multimodal = multimodal  # False: the chat wire refuses images as llama.cpp without --mmproj does
        # False: a streamed chat call with tools gets a 200 event stream with no event, as
        # llama-cpp-python's chatml-function-calling handler answers it (no step is used).
        self.streams_tools = streams_tools
        self.empty_streams = 0  # streamed calls answered so
        # Set: ``GET /props`` answers as llama.cpp's server does, naming this window (n_ctx).
        self.window = window
        self.rejected: list[str] = []  # strict mode: the rule each refused request broke
        self.url = ""  # OpenAI base URL: http://127.0.0.1:PORT/v1
        self.anthropic_url = ""  # Anthropic base URL: http://127.0.0.1:PORT
        self.requests: list[dict[str, Any]] = []
        # Streaming: (time.monotonic(), text) of each content chunk as it was sent.
        self.text_sent: list[tuple[float, str]] = []
        self.request_headers: list[dict[str, str]] = []  # lower-cased names, one per call
        self.request_times: list[float] = []  # time.monotonic() of each call, in order
        self.unexpected: list[str] = []
        self._steps: list[Step] = list(steps)
        self._cond = threading.Condition()
        self._calls = 0  # chat completion calls received
        self._served = 0  # script steps handed out
        self._held = 0  # held steps handed out
        self._released = 0  # held steps up to this number may proceed
        self._stopping = False
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> ScriptedModelServer:
        if self._httpd is not None:
            raise RuntimeError("scripted model server already started")
        self._stopping = False
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, self)
        host, port = self._httpd.server_address[:2]
        self.anthropic_url = f"http://{host}:{port}"
        self.url = f"{self.anthropic_url}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{self.name}-model-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; held and delayed steps are dropped, open connections closed."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        httpd.close_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- script --------------------------------------------------------------

    def add(self, *steps: Step) -> None:
        with self._cond:
            self._steps.extend(steps)

    def release(self) -> None:
        """Let every held step whose request has already arrived answer."""
        with self._cond:
            self._released = self._held
            self._cond.notify_all()

    def hits(self) -> int:
        """Chat completion calls received, expected or not."""
        with self._cond:
            return self._calls

    def assert_consumed(self) -> None:
        with self._cond:
            remaining, unexpected = len(self._steps), list(self.unexpected)
        problems = []
        if remaining:
            problems.append(f"{remaining} scripted step(s) never requested")
        if unexpected:
            problems.append("unexpected calls: " + "; ".join(unexpected))
        if self.rejected:
            problems.append("requests a strict server refuses: " + "; ".join(self.rejected))
        if problems:
            raise AssertionError(f"{self.name}: " + ", ".join(problems))

    # -- used by the handler -------------------------------------------------

    def _take(
        self, body: dict[str, Any] | None, problem: str | None, headers: dict[str, str] | None = None
    ) -> tuple[int, Step | None, int, str]:
        """Record one call; return (step number, step, hold ticket, problem if no step)."""
        with self._cond:
            self._calls += 1
            number = self._calls
            if self.record:
                self.request_times.append(time.monotonic())
                self.request_headers.append(dict(headers or {}))
                if body is not None:
                    self.requests.append(body)
            if problem is None and not self._steps:
                problem = f"{self.name} model: unexpected call #{number}"
            if problem is not None:
                self.unexpected.append(problem)
                return number, None, 0, problem
            step = self._steps.pop(0)
            self._served += 1
            ticket = 0
            if step.hold:
                self._held += 1
                ticket = self._held
            return self._served, step, ticket, ""

    def _check(self, path: str, body: dict[str, Any]) -> scripted_strict.Rejection | None:
        """Strict mode: what the server this wire mirrors refuses in ``body`` (None if nothing)."""
        if path == CHAT_PATH:
            return scripted_strict.check(body, multimodal=self.multimodal)
        return STRICT[path](body)

    def _reject(self, body: dict[str, Any], headers: dict[str, str], rule: str = "") -> None:
        """Record a request answered without a step: one strict mode refused (its ``rule``), or
        a streamed call with tools answered with an empty stream (no rule)."""
        with self._cond:
            self._calls += 1
            if self.record:
                self.request_times.append(time.monotonic())
                self.request_headers.append(dict(headers))
                self.requests.append(body)
            if rule:
                self.rejected.append(rule)
            else:
                self.empty_streams += 1

    def _wait(self, step: Step, ticket: int) -> bool:
        """Apply the step's delay and hold; False when the server is stopping."""
        deadline = time.monotonic() + step.delay_s
        with self._cond:
            while not self._stopping and time.monotonic() < deadline:
                self._cond.wait(deadline - time.monotonic())
            while not self._stopping and ticket and self._released < ticket:
                self._cond.wait()
            return not self._stopping


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], handler: type, owner: ScriptedModelServer) -> None:
        self.owner = owner
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # skip HTTPServer's reverse DNS lookup
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # clients hanging up are normal
            super().handle_error(request, client_address)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._open_lock:
            sockets, self._open = list(self._open), set()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        window = self.server.owner.window  # type: ignore[attr-defined]
        if self.path == "/props" and window is not None:
            self._send_json(200, {"default_generation_settings": {"n_ctx": window}, "total_slots": 1})
            return
        self._send_json(404, scripted_chat.error_body(f"no route for GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?", 1)[0]
        if path not in STRICT:
            self._send_json(404, scripted_chat.error_body(f"no route for POST {self.path}", "not_found"))
            return
        anthropic = path == MESSAGES_PATH
        owner = self.server.owner
        body, problem = _decode(raw)
        headers = {key.lower(): value for key, value in self.headers.items()}
        rejection = owner._check(path, body) if owner.strict and body is not None else None
        if rejection is not None:
            owner._reject(body or {}, headers, rejection.rule)
            self._send_json(rejection.status, rejection.body)
            return
        if path == CHAT_PATH and not owner.streams_tools and body and body.get("stream") and body.get("tools"):
            owner._reject(body, headers)
            self._send_events([], Step())
            return
        number, step, ticket, problem = owner._take(body, problem, headers)
        if step is None:
            error = scripted_chat.error_body(problem, "invalid_request_error")
            self._send_json(400, scripted_anthropic.error_body(400, error) if anthropic else error)
            return
        if not owner._wait(step, ticket):
            self.close_connection = True  # stopping: drop the call like a dead server would
            return
        try:
            if step.raw is not None:
                streaming = "text/event-stream" if body and body.get("stream") else "application/json"
                self._send(step.status, step.raw.encode(), streaming, step.headers)
            elif step.status != 200:
                self._send_error_step(step, anthropic)
            elif path == RESPONSES_PATH and body and body.get("stream"):
                self._send_events(scripted_responses.frames(step, number, owner.name, body), step)
            elif path == RESPONSES_PATH:
                self._send_json(200, scripted_responses.response(step, number, owner.name, body or {}), step.headers)
            elif anthropic and body and body.get("stream"):
                self._send_events(scripted_anthropic.frames(step, number, owner.name), step)
            elif anthropic:
                self._send_json(200, scripted_anthropic.message(step, number, owner.name), step.headers)
            elif body and body.get("stream"):
                options = body.get("stream_options")
                include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
                self._send_events(scripted_chat.frames(step, number, owner.name, include_usage, time.time()), step)
            else:
                self._send_json(200, scripted_chat.completion(step, number, owner.name, time.time()), step.headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_error_step(self, step: Step, anthropic: bool) -> None:
        body = step.error_body
        if body is None:
            body = scripted_chat.error_body(f"scripted error {step.status}", "server_error")
        if isinstance(body, str):
            kind = "text/html" if body.lstrip().startswith("<") else "text/plain"
            self._send(step.status, body.encode(), f"{kind}; charset=utf-8", step.headers)
        else:
            if anthropic:
                body = scripted_anthropic.error_body(step.status, body)
            self._send_json(step.status, body, step.headers)

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(body).encode(), "application/json", headers or {})

    def _send(self, status: int, payload: bytes, content_type: str, headers: dict[str, str]) -> None:
        self.send_response(status)
        if not any(key.lower() == "content-type" for key in headers):
            self.send_header("Content-Type", content_type)
        for key, value in headers.items():
            if key.lower() not in ("content-length", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_events(self, events: list[str], step: Step) -> None:
        """SSE frames, ended by closing the connection (no Content-Length, no chunked encoding)."""
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        for key, value in step.headers.items():
            if key.lower() not in ("content-type", "content-length", "connection"):
                self.send_header(key, value)
        self.send_header("Connection", "close")
        self.end_headers()
        owner = self.server.owner  # type: ignore[attr-defined]
        for sent, event in enumerate(events):
            if sent == step.stall_after:  # a model that stops generating, connection open
                with owner._cond:
                    while not owner._stopping:
                        owner._cond.wait()
                return
            self.wfile.write(event.encode())
            self.wfile.flush()
            piece = scripted_chat.content_piece(event)
            if piece:
                owner.text_sent.append((time.monotonic(), piece))
            if step.frame_delay_s:
                time.sleep(step.frame_delay_s)


def _decode(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    try:
        body = json.loads(raw)
    except ValueError as exc:
        return None, f"request body is not valid JSON: {exc}"
    if not isinstance(body, dict):
        return None, "request body is not a JSON object"
    return body, None
