"""A write-through cache of a keyed stage's per-host values in front of the keyed state that
keeps them: reading keyed state from Python costs a call into the JVM and a conversion of the
value each time, and the fetch stage reads its host's values on every timer (its host row, the
host's not-found answer).

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
    """The last ``capacity`` hosts' values in memory, in front of their keyed state: the state
    read on a miss, and written only when a value changes. Not thread-safe."""

    _UNKNOWN = object()

    def __init__(self, capacity: int = 100_000) -> None:
        self._capacity = capacity
        self._values: OrderedDict[str, V] = OrderedDict()

    def get(self, host: str, read: Callable[[], V]) -> V:
        """The value of ``host``; ``read`` reads its state (the current key's) on a miss."""
        value = self._values.get(host, self._UNKNOWN)
        if value is self._UNKNOWN:
            value = read()
            self._remember(host, value)
        else:
            self._values.move_to_end(host)
        return value  # type: ignore[return-value]

    def put(self, host: str, value: V, write: Callable[[V], None]) -> None:
        """Keep ``value`` for ``host``: ``write`` stores it (in the current key's state) if it
        changed."""
        if self._values.get(host, self._UNKNOWN) != value:
            write(value)
        self._remember(host, value)

    def __len__(self) -> int:
        return len(self._values)

    def _remember(self, host: str, value: V) -> None:
        self._values[host] = value
        self._values.move_to_end(host)
        if len(self._values) > self._capacity:
            self._values.popitem(last=False)
