"""How every scripted wire (chat completions, Anthropic messages, Responses) cuts a text
into the deltas of a stream: a few consecutive pieces, so a client that joins them wrongly
(drops, repeats or reorders one) shows it."""

from __future__ import annotations


def pieces(value: str, parts: int = 3) -> list[str]:
    """Split text into up to ``parts`` consecutive non-empty pieces."""
    if not value:
        return []
    size = -(-len(value) // parts)
    return [value[i : i + size] for i in range(0, len(value), size)]
