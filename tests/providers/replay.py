"""Wire fixtures, hand-written from the providers' documentation, replayed through
``httpx.MockTransport``.

A fixture is ``tests/providers/fixtures/<wire>/<name>.json``:
    source     where its shapes come from
    stream     whether the request streams (then the answer is SSE events)
    response   ``status``, ``headers``, and ``json`` (the body) or ``events``
               (``[{"event": name, "data": {...}}]``, sent as SSE frames)
    expect     what the adapter makes of it: ``content``, ``tool_calls`` ([[name, args]]),
               ``thinking`` (the ThinkingPart fields that are set), ``finish_reason``,
               ``usage`` ([input, output, cache read, cache write]), ``text_deltas``,
               ``assistant_blocks`` / ``assistant_items`` (what goes back on the wire), or
               ``error`` (``kind``, ``retryable``, ``status``, ``retry_after_s``, and text
               the ``message`` contains)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from core.messages import LlmRequest, TurnResult
from providers.errors import ProviderError
from providers.http import HttpProvider

FIXTURES = Path(__file__).parent / "fixtures"


def load(wire: str) -> dict[str, dict[str, Any]]:
    return {path.stem: json.loads(path.read_text()) for path in sorted((FIXTURES / wire).glob("*.json"))}


def sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['event']}\ndata: {json.dumps(e['data'])}\n\n" for e in events).encode()


def transport(fixture: dict[str, Any]) -> httpx.MockTransport:
    answer = fixture["response"]
    headers = dict(answer.get("headers", {}))
    if "events" in answer:
        headers["content-type"] = "text/event-stream"
        return httpx.MockTransport(lambda _: httpx.Response(answer["status"], content=sse(answer["events"]),
                                                            headers=headers))
    return httpx.MockTransport(lambda _: httpx.Response(answer["status"], json=answer["json"], headers=headers))


async def replay(provider: HttpProvider, fixture: dict[str, Any], req: LlmRequest) -> tuple[TurnResult | ProviderError,
                                                                                          list[str]]:
    """The fixture's answer to ``req`` (streamed as the fixture says): the result or the error,
    and the text deltas seen."""
    deltas: list[str] = []
    try:
        result = await provider.complete(req.model_copy(update={"stream": bool(fixture.get("stream"))}), deltas.append)
    except ProviderError as err:
        return err, deltas
    return result, deltas


def check(outcome: TurnResult | ProviderError, deltas: list[str], expect: dict[str, Any]) -> None:
    """Assert what the fixture expects of the adapter's result or error."""
    if "error" in expect:
        assert isinstance(outcome, ProviderError), f"expected an error, got {outcome!r}"
        want = expect["error"]
        assert (outcome.kind, outcome.retryable) == (want["kind"], want["retryable"]), str(outcome)
        for key in ("status", "retry_after_s"):
            if key in want:
                assert getattr(outcome, key) == want[key]
        assert want["message"] in outcome.message
    else:
        assert isinstance(outcome, TurnResult), f"expected a result, got {outcome!r}"
        assert outcome.content == expect.get("content", "")
        assert [[c.name, c.arguments] for c in outcome.tool_calls] == expect.get("tool_calls", [])
        assert all(c.parse_error is None for c in outcome.tool_calls)
        if "finish_reason" in expect:
            assert outcome.finish_reason == expect["finish_reason"]
        if "usage" in expect:
            u = outcome.usage
            assert [u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens] == expect["usage"]
        thinking = [p.model_dump(include=set(want)) for p, want in zip(outcome.thinking, expect.get("thinking", []))]
        assert thinking == expect.get("thinking", []) and len(outcome.thinking) == len(thinking)
    if "text_deltas" in expect:
        assert deltas == expect["text_deltas"]
