"""Issue 29's shape of the house, held by CI: one turn's path through at most 15 engine files
(as docs/turn.md names them), at most 10 source files over 300 lines, none on that path."""

from __future__ import annotations

from benchmarks.house import count


def test_one_turn_names_at_most_15_files_and_none_of_them_is_long():
    house = count()
    assert 0 < len(house.turn_files) <= 15, house.turn_files
    long = {name for name, _ in house.long_files}
    assert len(long) <= 10, sorted(long)
    assert not long & set(house.turn_files), sorted(long & set(house.turn_files))
