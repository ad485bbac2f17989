"""Nothing reads the environment but the entry points and runtime/settings.py, and nothing
builds settings but them (issue 29): the settings are read once and handed down, and a new
reader fails here with its line."""

from __future__ import annotations

from benchmarks.house import count


def test_no_other_module_reads_the_environment():
    reads = count().env_reads
    assert not reads, f"read the environment through runtime/settings.py or an entry point instead: {reads}"


def test_no_service_reads_its_own_settings():
    # A service is handed its settings (or the SecretStore, store or paths built from them) by
    # an entry point; one that reads them itself when given none is a second way in.
    reads = count().settings_reads
    assert not reads, f"take the settings as an argument, handed down from an entry point: {reads}"
