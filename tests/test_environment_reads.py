"""Nothing reads the environment but the entry points and runtime/settings.py (issue 29): the
settings are read once and handed down, and a new reader fails here with its line."""

from __future__ import annotations

from benchmarks.house import count


def test_no_other_module_reads_the_environment():
    reads = count().env_reads
    assert not reads, f"read the environment through runtime/settings.py or an entry point instead: {reads}"
