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


def test_past_its_weight_the_oldest_puts_go_but_never_the_newest():
    cache: BoundedCache[str, str] = BoundedCache(10, max_weight=100)
    cache.put("a", "x", 40)
    cache.put("b", "y", 40)
    cache.put("a", "x2", 50)  # a again, heavier: b is the oldest now
    assert (cache.get("a"), cache.get("b")) == ("x2", "y") and cache.weight("a") == 50
    cache.put("c", "z", 30)  # 120: b goes
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("x2", None, "z")
    cache.put("d", "w", 500)  # heavier than it all: kept alone
    assert (cache.get("a"), cache.get("c"), cache.get("d")) == (None, None, "w")
    assert cache.pop("d") == "w" and cache.weight("d") == 0


def test_on_evict_is_told_each_key_dropped_for_room_and_no_other():
    evicted: list[str] = []
    cache: BoundedCache[str, int] = BoundedCache(2, on_evict=evicted.append)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 3)  # put again: not dropped
    cache.pop("b")  # taken out on purpose: not an eviction
    cache.put("c", 4)
    cache.put("d", 5)
    assert evicted == ["a"] and cache.get("c") == 4 and cache.get("d") == 5
