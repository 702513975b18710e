"""A write-through cache of a keyed stage's values in front of the keyed state that keeps them:
reading keyed state from Python costs a call into the JVM and a conversion of the value each
time, and the fetch stage reads its host's values on every timer (the host row, by the host's
fetch key; the host's not-found answer, by the host).

The stage is the only writer of its keys' state, and a function that restarts (a failure, a
restore) starts with an empty cache, so what the cache holds is what the state holds.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["StateCache"]

V = TypeVar("V")


class StateCache(Generic[V]):
    """The last ``capacity`` keys' values in memory, in front of their keyed state: the state
    read on a miss, and written only when a value changes. Not thread-safe."""

    _UNKNOWN = object()

    def __init__(self, capacity: int = 100_000) -> None:
        self._capacity = capacity
        self._values: OrderedDict[str, V] = OrderedDict()

    def get(self, key: str, read: Callable[[], V]) -> V:
        """The value of ``key``; ``read`` reads it from the state (Flink's current key's) on a
        miss."""
        value = self._values.get(key, self._UNKNOWN)
        if value is self._UNKNOWN:
            value = read()
            self._remember(key, value)
        else:
            self._values.move_to_end(key)
        return value  # type: ignore[return-value]

    def put(self, key: str, value: V, write: Callable[[V], None]) -> None:
        """Keep ``value`` for ``key``: ``write`` stores it (in Flink's current key's state) if it
        changed."""
        if self._values.get(key, self._UNKNOWN) != value:
            write(value)
        self._remember(key, value)

    def __len__(self) -> int:
        return len(self._values)

    def _remember(self, key: str, value: V) -> None:
        self._values[key] = value
        self._values.move_to_end(key)
        if len(self._values) > self._capacity:
            self._values.popitem(last=False)
