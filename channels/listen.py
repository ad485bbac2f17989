"""One local HTTP endpoint for the platforms that push events to us (Slack's Events API and
interactivity, Telegram's webhook, our signed webhooks): an aiohttp server that runs until its
task is cancelled. The gateway's one inbound HTTP stack.

aiohttp is already what slack_sdk's async client and Socket Mode and matrix-nio stand on, so
this adds no server stack. ``ready`` is set with the bound URL once it listens (port 0 picks a free one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Endpoint:
    def __init__(self, host: str, port: int, path: str) -> None:
        self.host, self.port, self.path = host, port, path
        self.ready = asyncio.Event()
        self.url = ""

    async def serve(self, handler: Handler) -> None:
        app = web.Application()
        app.router.add_post(self.path, handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.url = f"http://{self.host}:{port}{self.path}"
            self.ready.set()
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()
