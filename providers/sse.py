"""Server-sent events as OpenAI-compatible servers really send them: the SSE rules, plus
llama.cpp's ``error: {...}`` line as an event named ``error`` (a spec parser would drop it
and see an empty success) and lines that are no SSE field collected in ``Events.stray`` (a
JSON error body sent as ``text/event-stream``). ``IdleGuard`` ends a streamed body that
goes quiet for ``idle_s`` once data has come (``StreamStalled``). Details: docs/providers.md.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import httpx
from httpx_sse import ServerSentEvent

_LINE_END = re.compile(r"\r\n|\r|\n")
_FIELDS = ("event", "data", "id", "retry")


class Events:
    """``async for event in Events(response)``; afterwards ``stray`` holds the other lines."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.stray: list[str] = []
        self._event = ""
        self._data: list[str] = []

    async def __aiter__(self) -> AsyncIterator[ServerSentEvent]:
        pending = ""
        async for text in self._response.aiter_text():
            pending += text
            held = pending.endswith("\r")  # maybe the first half of \r\n: wait for the rest
            *lines, pending = _LINE_END.split(pending[:-1] if held else pending)
            pending += "\r" if held else ""
            for line in lines:
                event = self._line(line)
                if event is not None:
                    yield event
        if pending:
            self._line(pending.rstrip("\r"))  # a last line without a line end: never an event

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            if not self._data and not self._event:
                return None
            event = ServerSentEvent(event=self._event or "message", data="\n".join(self._data))
            self._event, self._data = "", []
            return event
        if line.startswith(":"):  # a comment (keep-alive)
            return None
        name, colon, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if colon and name == "error":  # llama.cpp
            self._event = "error"
            self._data.append(value)
        elif colon and name == "data":
            self._data.append(value)
        elif colon and name == "event":
            self._event = value
        elif not (colon and name in _FIELDS):
            self.stray.append(line)
        return None


class StreamStalled(Exception):
    """A stream that had started sent no data for ``idle_s`` seconds."""


_COMMENTS_ONLY = re.compile(rb"^(?:(?::[^\r\n]*)?(?:\r\n|\r|\n))*$")


class IdleGuard(httpx.AsyncByteStream):
    """A streamed body whose gaps after the first data are bounded by ``idle_s``."""

    def __init__(self, inner: httpx.AsyncByteStream | httpx.SyncByteStream, idle_s: float) -> None:
        assert isinstance(inner, httpx.AsyncByteStream)
        self._inner = inner
        self._idle_s = idle_s

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = aiter(self._inner)
        loop = asyncio.get_running_loop()
        last: float | None = None  # when data last came (None: none yet)
        while True:
            try:
                if last is None:
                    chunk = await anext(chunks)
                else:
                    async with asyncio.timeout_at(last + self._idle_s):
                        chunk = await anext(chunks)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise StreamStalled(f"the stream stalled: no data for {self._idle_s:g} s after it had started") from None
            if not _COMMENTS_ONLY.match(chunk):
                last = loop.time()
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
