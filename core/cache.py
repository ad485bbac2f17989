"""A dict that keeps only its latest keys: the one shape of the worker's in-memory caches.

Each cache of the kind (a task's verified entries, its built prompt, a tool spec's size, the
validated arguments of the latest calls) holds what one process can rebuild, so it needs no
expiry, only a bound: a put makes its key the newest, and past ``size`` keys the oldest put
is dropped. Not thread-safe; each user lives on one event loop.
"""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """At most ``size`` keys; the oldest put goes first."""

    __slots__ = ("size", "_items")

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def put(self, key: K, value: V) -> V:
        """Keep ``value`` under ``key`` as the newest; returns it."""
        items = self._items
        items.pop(key, None)
        items[key] = value
        if len(items) > self.size:
            del items[next(iter(items))]
        return value

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)
