"""One scripted model response: what the scripted server (fakes/scripted.py) answers a call with.

Its own module because each wire's renderer (fakes/scripted_chat.py, scripted_anthropic.py,
scripted_responses.py) reads it and the server imports the renderers.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Step(BaseModel):
    """One scripted response."""

    tool_calls: list[tuple[str, dict[str, Any] | str]] = Field(default_factory=list)
    text: str = ""
    reasoning: str | None = None
    status: int = 200  # != 200 -> error response
    error_body: dict[str, Any] | str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    delay_s: float = 0.0  # wait before answering
    text_pieces: int = 3  # streaming: the text arrives in this many content chunks
    frame_delay_s: float = 0.0  # streaming: pause after each event, like a model generating
    hold: bool = False  # block until server.release() (or stop())
    cut_stream: bool = False  # streaming: send some chunks, then close without [DONE]
    stall_after: int | None = None  # streaming: send this many events, then nothing until stop()
    stream_error: str | None = None  # streaming: send some chunks, then this error type
    usage: tuple[int, int] = (10, 5)  # (prompt_tokens, completion_tokens)
    report_usage: bool = True  # OpenAI wire: False sends no usage object, streamed or not
    # Answer with exactly this body and ``status`` (content type from ``headers``, else JSON,
    # or SSE for a streaming request): replayed fixtures, an empty or cut-off answer.
    raw: str | None = None
    cache: tuple[int, int] = (0, 0)  # (cache read, cache write) tokens, part of prompt_tokens
