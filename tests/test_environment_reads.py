"""Nothing reads the environment but the entry points and runtime/settings.py (issue 29): the
settings are read once and handed down. The modules below still do, until the second pass
converts them; the list only shrinks, and a new reader fails here with its line."""

from __future__ import annotations

from benchmarks.house import count

SECOND_PASS: set[str] = set()  # every module converted


def test_no_other_module_reads_the_environment():
    reads = count().env_reads
    new = [read for read in reads if read.split(":")[0] not in SECOND_PASS]
    assert not new, f"read the environment through runtime/settings.py or an entry point instead: {new}"


def test_the_second_pass_list_only_shrinks():
    """A module converted leaves the list: one that no longer reads the environment fails here."""
    readers = {read.split(":")[0] for read in count().env_reads}
    assert not SECOND_PASS - readers, f"these no longer read the environment: drop them from SECOND_PASS: {SECOND_PASS - readers}"
