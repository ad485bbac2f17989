"""The bounded cache: the newest puts are kept, the oldest put goes first."""

from __future__ import annotations

from core.cache import BoundedCache


def test_a_bounded_cache_drops_the_oldest_put_past_its_size():
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.put("c", 3) == 3
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (None, 2, 3)


def test_a_put_again_makes_its_key_the_newest():
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (10, None, 3)


def test_pop_removes_a_key_and_gives_none_for_a_missing_one():
    cache: BoundedCache[str, int] = BoundedCache(4)
    cache.put("a", 1)
    assert cache.pop("a") == 1 and cache.pop("a") is None and cache.get("a") is None
