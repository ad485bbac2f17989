"""Helpers shared by the provider tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx


class Recorder:
    """A MockTransport handler that answers with a fixed response and keeps each request."""

    def __init__(self, respond: Callable[[httpx.Request], httpx.Response]) -> None:
        self.respond = respond
        self.requests: list[httpx.Request] = []

    def __call__(self, req: httpx.Request) -> httpx.Response:
        self.requests.append(req)
        return self.respond(req)

    @property
    def body(self) -> dict[str, Any]:
        return json.loads(self.requests[-1].content)
