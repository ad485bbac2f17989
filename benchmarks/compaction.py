"""Compaction speed on a ~200K-token transcript.

    python -m benchmarks.compaction [--turns 200] [--result-bytes 4000] [--repeat 200]

Builds a synthetic transcript (a request, file reads of different paths with
results of about ``--result-bytes``, a shell call now and then, a few user
messages, loop reminders and status notices), then times ``compact`` with the
default policy (128K window) ``--repeat`` times. Prints the median and p95
time per call (and the first call, before the summary-line cache is warm)
and what the compaction did. Without ``--turns`` it runs two
shapes: 200 turns of 4 KB results and 600 turns of 1.3 KB results.
"""

from __future__ import annotations

import argparse
import statistics
import time

from core.compaction import CompactionPolicy, _cached_tool_line, compact
from core.entries import (
    AiMessage,
    Entry,
    StatusNotice,
    SystemReminder,
    ToolCall,
    ToolResult,
    Transcript,
    UserMessage,
)
from core.messages import ToolCallRequest
from core.turns import group_turns
from tools import COMPACT_KEYS

_LINE = "    value = compute(alpha, beta, gamma)  # a line of source code, about 64 chars\n"


def build_transcript(turns: int, result_bytes: int) -> list[Entry]:
    transcript = Transcript()
    transcript.append(UserMessage(text="Refactor the parser package and keep the tests green. " * 4))
    body = (_LINE * (result_bytes // len(_LINE) + 1))[:result_bytes]
    for i in range(turns):
        if i % 50 == 25:
            transcript.append(UserMessage(text=f"Also check module {i} while you are there."))
        if i % 7 == 6:
            call = ToolCallRequest(id=f"call_{i}", name="shell", arguments={"command": f"pytest -q tests/test_{i}.py"})
        else:
            call = ToolCallRequest(
                id=f"call_{i}", name="file", arguments={"action": "read", "path": f"src/parser/module_{i}.py"}
            )
        deferred = ToolCallRequest(id=f"call_{i}_b", name="file", arguments={"action": "list", "path": "src"})
        calls = [call, deferred] if i % 10 == 3 else [call]
        transcript.append(ToolCall(text="Reading the next module.", calls=calls))
        transcript.append(ToolResult(call_id=call.id, name=call.name, content=f"# module {i}\n{body}"))
        if len(calls) > 1:
            transcript.append(ToolResult(call_id=deferred.id, name="file", content="[not executed]", status="deferred"))
        if i % 40 == 39:
            transcript.append(SystemReminder(text="You are repeating a call.", reason="loop"))
        if i % 60 == 59:
            transcript.append(StatusNotice(text="retrying the model call"))
    transcript.append(AiMessage(text="Done with the first pass."))
    return transcript.entries


def run(turns: int, result_bytes: int, repeat: int) -> None:
    entries = build_transcript(turns, result_bytes)
    policy = CompactionPolicy(compact_keys=COMPACT_KEYS)
    _cached_tool_line.cache_clear()  # the first call formats every summary line itself
    start = time.perf_counter()
    result = compact(entries, policy)
    cold_ms = (time.perf_counter() - start) * 1000
    times: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        compact(entries, policy)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    group_start = time.perf_counter()
    group_turns(entries)
    group_ms = (time.perf_counter() - group_start) * 1000
    print(
        f"{turns} tool turns x {result_bytes} B results, {len(entries)} entries\n"
        f"  compact: median {statistics.median(times):.2f} ms, p95 {p95:.2f} ms over {repeat} calls"
        f" (first call {cold_ms:.2f} ms; group_turns alone {group_ms:.2f} ms)\n"
        f"  tokens {result.tokens_before} -> {result.tokens_after}"
        f" (window {policy.context_window}, threshold {policy.trigger_tokens:.0f})\n"
        f"  turns compacted {result.compacted_turns}, dropped {result.dropped_turns},"
        f" results truncated {result.truncated_results}, view {len(result.entries)} entries,"
        f" first kept seq {result.first_kept_seq}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int)
    parser.add_argument("--result-bytes", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    shapes = [(args.turns, args.result_bytes)] if args.turns else [(200, 4000), (600, 1300)]
    for turns, result_bytes in shapes:
        run(turns, result_bytes, args.repeat)


if __name__ == "__main__":
    main()
