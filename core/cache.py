"""A dict that keeps only its latest keys: the one shape of the worker's in-memory caches.

Each cache of the kind (a task's verified entries, its built prompt, a tool spec's size, the
validated arguments of the latest calls) holds what one process can rebuild, so it needs no
expiry, only a bound: a put makes its key the newest, and past ``size`` keys the oldest put
is dropped. A cache whose values differ much in size (one task's entries: ten of them, or a
10,000-turn task's with its large outputs expanded) also bounds their total ``weight``, as
each put states it; what is kept beside a value (its compaction memo) goes with it through
``on_evict``. Not thread-safe; each user lives on one event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """At most ``size`` keys, and at most ``max_weight`` in all (but for the newest key, kept
    whatever it weighs); the oldest put goes first, and ``on_evict`` is told its key."""

    __slots__ = ("size", "max_weight", "on_evict", "_items", "_weights", "_total")

    def __init__(self, size: int, max_weight: int | None = None,
                 on_evict: Callable[[K], object] | None = None) -> None:
        self.size, self.max_weight, self.on_evict = size, max_weight, on_evict
        self._items: dict[K, V] = {}
        self._weights: dict[K, int] = {}
        self._total = 0

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def weight(self, key: K) -> int:
        """What ``key``'s value weighed when put (0 when it is not here)."""
        return self._weights.get(key, 0)

    def put(self, key: K, value: V, weight: int = 0) -> V:
        """Keep ``value`` under ``key`` as the newest; returns it."""
        items = self._items
        self.pop(key)
        items[key], self._weights[key] = value, weight
        self._total += weight
        while len(items) > self.size or (self.max_weight is not None and self._total > self.max_weight
                                         and len(items) > 1):
            oldest = next(iter(items))
            self.pop(oldest)
            if self.on_evict is not None:
                self.on_evict(oldest)
        return value

    def pop(self, key: K) -> V | None:
        self._total -= self._weights.pop(key, 0)
        return self._items.pop(key, None)
