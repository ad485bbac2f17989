"""`watch` on another host shows the model's text while it streams (no shared disk, no history event per token)."""

from __future__ import annotations

from benchmarks.stream_latency import watch_deltas


async def test_watch_with_its_own_data_directory_shows_text_while_the_model_streams(client, tmp_path):
    sent, printed = await watch_deltas(client, pieces=20, every_s=0.1, root=tmp_path)
    assert len(sent) == 20 and all(t != float("inf") for t in printed)  # every chunk was shown
    assert printed[0] < sent[-1]  # the first words were on screen before the model had finished
    assert sum(p - s < 1.0 for s, p in zip(sent, printed)) >= 18  # and nearly all within a second
