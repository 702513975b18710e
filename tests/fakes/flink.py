"""A keyed operator of Flink in memory: keyed state, processing-time timers, contexts, metrics.

Faithful to Flink (and PyFlink's thread mode) where the crawler's operators rely on it:

- keyed state is read and written under the current key only (outside a key context, as in
  ``open()``, Flink fails: so does this); what a handler gets back is a copy, as from RocksDB
  (changing it changes nothing stored), and rows come back without field names;
- ``ValueState.update(None)`` clears the value; an empty ``ListState.get()`` is an empty
  iterator (a generator, truthy, as PyFlink's thread mode returns it); ``MapState.get`` of a
  missing key is None;
- a processing-time timer is kept once per key and timestamp (registering it again changes
  nothing); timers fire in timestamp order (ties in the order registered), each with its own key
  as the current key, and a timer registered while timers fire fires in the same advance when it
  is due by then (Flink's ``InternalTimerServiceImpl.onProcessingTime`` loops until the head of
  its queue is later than the time);
- timers and keyed state are what a checkpoint holds (:meth:`KeyedHarness.snapshot`), and a
  function opened over a snapshot sees exactly them, with its attempt number one higher.

The clock moves only when a test advances it: while timers fire, it stands at each timer's
timestamp in turn, as on a machine that keeps up.
"""

from __future__ import annotations

import copy
import dataclasses
import heapq
import itertools
from collections.abc import Iterator
from typing import Any

from pyflink.common import Row
from pyflink.datastream import KeyedProcessFunction, TimeDomain
from pyflink.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)

__all__ = ["FakeGauge", "FakeMetricGroup", "FakeRuntimeContext", "KeyedHarness", "Snapshot"]

#: Timers one advance may fire before the harness calls it a loop that never ends.
MAX_FIRINGS_PER_ADVANCE = 100_000


def _stored(value: Any) -> Any:
    """What a read returns of a stored value: a copy, rows without their field names."""
    if isinstance(value, Row):
        return Row(*(copy.deepcopy(tuple(value))))
    return copy.deepcopy(value)


class _KeyedStore:
    """Every key's values of one state, and the key being handled."""

    def __init__(self, backend: _Backend, name: str) -> None:
        self._backend = backend
        self._name = name

    def _key(self) -> Any:
        key = self._backend.current_key
        if key is None:
            raise RuntimeError(f"state {self._name!r} used outside a key context")
        return key

    @property
    def _values(self) -> dict[Any, Any]:
        """The current key's values, to read (nothing is created for the key)."""
        return self._backend.tables[self._name].get(self._key(), {})

    @property
    def _writable(self) -> dict[Any, Any]:
        return self._backend.tables[self._name].setdefault(self._key(), {})

    def _drop_empty(self) -> None:
        table = self._backend.tables[self._name]
        key = self._key()
        if not table.get(key):
            table.pop(key, None)


class FakeValueState(_KeyedStore):
    """PyFlink's ValueState of the current key."""

    def value(self) -> Any:
        return _stored(self._values.get("value"))

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
            return
        self._writable["value"] = copy.deepcopy(value)

    def clear(self) -> None:
        self._values.pop("value", None)
        self._drop_empty()


class FakeListState(_KeyedStore):
    """PyFlink's ListState of the current key."""

    def get(self) -> Iterator[Any]:
        items = [_stored(item) for item in self._values.get("items", [])]
        yield from items

    def add(self, value: Any) -> None:
        self._writable.setdefault("items", []).append(copy.deepcopy(value))

    def add_all(self, values: list[Any]) -> None:
        for value in values:
            self.add(value)

    def update(self, values: list[Any]) -> None:
        self.clear()
        self.add_all(values)

    def clear(self) -> None:
        self._values.pop("items", None)
        self._drop_empty()


class FakeMapState(_KeyedStore):
    """PyFlink's MapState of the current key."""

    def get(self, key: Any) -> Any:
        return _stored(self._values.get(key))

    def put(self, key: Any, value: Any) -> None:
        self._writable[key] = copy.deepcopy(value)

    def put_all(self, entries: dict[Any, Any]) -> None:
        for key, value in entries.items():
            self.put(key, value)

    def remove(self, key: Any) -> None:
        self._values.pop(key, None)
        self._drop_empty()

    def contains(self, key: Any) -> bool:
        return key in self._values

    def items(self) -> Iterator[tuple[Any, Any]]:
        yield from [(key, _stored(value)) for key, value in self._values.items()]

    def keys(self) -> Iterator[Any]:
        yield from list(self._values)

    def values(self) -> Iterator[Any]:
        yield from [_stored(value) for value in self._values.values()]

    def is_empty(self) -> bool:
        return not self._values

    def clear(self) -> None:
        self._values.clear()
        self._drop_empty()


@dataclasses.dataclass
class Snapshot:
    """What a checkpoint of the operator holds: keyed state and timers (not the clock)."""

    tables: dict[str, dict[Any, dict[Any, Any]]]
    descriptors: dict[str, tuple[str, str]]
    timers: list[tuple[int, Any]]
    attempt: int


class _Backend:
    """The keyed state of one operator: state name -> key -> the key's values."""

    def __init__(self, snapshot: Snapshot | None = None) -> None:
        self.current_key: Any = None
        self.tables: dict[str, dict[Any, dict[Any, Any]]] = (
            copy.deepcopy(snapshot.tables) if snapshot is not None else {}
        )
        #: state name -> (kind, type information), as the function declared it
        self.descriptors: dict[str, tuple[str, str]] = (
            dict(snapshot.descriptors) if snapshot is not None else {}
        )

    def declare(self, kind: str, descriptor: StateDescriptor) -> str:
        name = descriptor.get_name()
        declared = (kind, repr(descriptor.type_info))
        known = self.descriptors.setdefault(name, declared)
        if known != declared:
            raise ValueError(f"state {name!r} declared as {declared}, held as {known}")
        self.tables.setdefault(name, {})
        return name


class FakeGauge:
    """A metric that keeps the last value it was given (PyFlink's thread-mode distribution)."""

    def __init__(self) -> None:
        self.value: int | None = None
        self.updates = 0

    def update(self, value: int) -> None:
        if type(value) is not int:
            raise TypeError(f"a Java long expected, got {value!r}")
        self.value = value
        self.updates += 1


class FakeMetricGroup:
    """PyFlink's MetricGroup as the crawler uses it: nested groups and distributions (one
    name registered once per group)."""

    def __init__(self, scope: str = "") -> None:
        self.scope = scope
        self.groups: dict[str, FakeMetricGroup] = {}
        self.gauges: dict[str, FakeGauge] = {}

    def add_group(self, name: str, extra: str | None = None) -> FakeMetricGroup:
        if name not in self.groups:
            self.groups[name] = FakeMetricGroup(f"{self.scope}.{name}".lstrip("."))
        return self.groups[name]

    def distribution(self, name: str) -> FakeGauge:
        if name in self.gauges:
            raise ValueError(f"metric {name!r} registered twice in {self.scope!r}")
        self.gauges[name] = FakeGauge()
        return self.gauges[name]

    def values(self) -> dict[str, int | None]:
        return {name: gauge.value for name, gauge in self.gauges.items()}

    def find(self, path: str) -> FakeMetricGroup:
        """The group at the dotted ``path`` below this one."""
        group = self
        for name in path.split("."):
            group = group.groups[name]
        return group


class _JobInfo:
    def __init__(self, job_id: str) -> None:
        self._job_id = job_id

    def getJobId(self) -> _JobInfo:  # noqa: N802 - the Java names PyFlink's context exposes
        return self

    def toString(self) -> str:  # noqa: N802
        return self._job_id


class _JavaRuntimeContext:
    """The part of thread mode's Java runtime context that ``operators.context`` reads."""

    def __init__(self, job_id: str) -> None:
        self._job_id = job_id

    def getJobInfo(self) -> _JobInfo:  # noqa: N802
        return _JobInfo(self._job_id)


class FakeRuntimeContext:
    """PyFlink's RuntimeContext of a keyed function: state, subtask identity, metrics."""

    def __init__(
        self,
        backend: _Backend | None = None,
        index: int = 0,
        parallelism: int = 1,
        attempt: int = 0,
        job_id: str | None = None,
    ) -> None:
        self._backend = backend if backend is not None else _Backend()
        self._index = index
        self._parallelism = parallelism
        self._attempt = attempt
        self.metrics = FakeMetricGroup()
        if job_id is not None:
            self._runtime_context = _JavaRuntimeContext(job_id)

    def get_index_of_this_subtask(self) -> int:
        return self._index

    def get_number_of_parallel_subtasks(self) -> int:
        return self._parallelism

    def get_attempt_number(self) -> int:
        return self._attempt

    def get_metrics_group(self) -> FakeMetricGroup:
        return self.metrics

    def get_state(self, descriptor: ValueStateDescriptor) -> FakeValueState:
        return FakeValueState(self._backend, self._backend.declare("value", descriptor))

    def get_list_state(self, descriptor: ListStateDescriptor) -> FakeListState:
        return FakeListState(self._backend, self._backend.declare("list", descriptor))

    def get_map_state(self, descriptor: MapStateDescriptor) -> FakeMapState:
        return FakeMapState(self._backend, self._backend.declare("map", descriptor))


class _TimerService:
    """Processing-time timers of one operator: one per key and timestamp."""

    def __init__(self, harness: KeyedHarness) -> None:
        self._harness = harness

    def current_processing_time(self) -> int:
        return self._harness.now_ms

    def current_watermark(self) -> int:
        return -(2**63)

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._harness._register(self._harness.current_key, int(timestamp))

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._harness._timers.discard((int(timestamp), self._harness.current_key))

    def register_event_time_timer(self, timestamp: int) -> None:
        raise NotImplementedError("the crawler's operators use processing time only")

    def delete_event_time_timer(self, timestamp: int) -> None:
        raise NotImplementedError("the crawler's operators use processing time only")


class _Context(KeyedProcessFunction.OnTimerContext):
    def __init__(self, harness: KeyedHarness, timestamp: int | None) -> None:
        self._harness = harness
        self._timestamp = timestamp

    def get_current_key(self) -> Any:
        return self._harness.current_key

    def timer_service(self) -> _TimerService:
        return self._harness.timer_service

    def timestamp(self) -> int | None:
        return self._timestamp

    def time_domain(self) -> TimeDomain:
        return TimeDomain.PROCESSING_TIME


class KeyedHarness:
    """Runs a ``KeyedProcessFunction`` as one subtask of Flink's keyed operator.

    ``process(key, value)`` hands a record to ``process_element`` under ``key``;
    ``advance_to(ms)`` moves processing time on and fires the timers due; both return what the
    handlers emitted, in order. Open the function with :meth:`open` first.
    """

    def __init__(
        self,
        function: KeyedProcessFunction,
        *,
        now_ms: int = 0,
        index: int = 0,
        parallelism: int = 1,
        job_id: str | None = None,
        restore: Snapshot | None = None,
    ) -> None:
        self.function = function
        self.now_ms = now_ms
        self._backend = _Backend(restore)
        self._timers: set[tuple[int, Any]] = set()
        self._queue: list[tuple[int, int, Any]] = []
        self._sequence = itertools.count()
        for timestamp, key in restore.timers if restore is not None else ():
            self._register(key, timestamp)
        self.runtime_context = FakeRuntimeContext(
            self._backend, index, parallelism, restore.attempt + 1 if restore else 0, job_id
        )
        self.timer_service = _TimerService(self)
        self.fired: list[tuple[int, Any]] = []

    @property
    def current_key(self) -> Any:
        return self._backend.current_key

    def open(self) -> KeyedHarness:
        self.function.open(self.runtime_context)
        return self

    def close(self) -> None:
        self.function.close()

    def process(self, key: Any, value: Any) -> list[Any]:
        """``process_element(value)`` under ``key``: what it emitted."""
        with self.keyed(key):
            return list(self.function.process_element(value, _Context(self, None)) or ())

    def advance_to(self, now_ms: int) -> list[Any]:
        """Move processing time to ``now_ms`` (never back), firing every timer due by then."""
        emitted: list[Any] = []
        for _ in range(MAX_FIRINGS_PER_ADVANCE):
            due = self._pop_due(now_ms)
            if due is None:
                self.now_ms = max(self.now_ms, now_ms)
                return emitted
            timestamp, key = due
            self.now_ms = max(self.now_ms, timestamp)
            self.fired.append(due)
            with self.keyed(key):
                emitted.extend(
                    self.function.on_timer(timestamp, _Context(self, timestamp)) or ()
                )
        raise RuntimeError(f"more than {MAX_FIRINGS_PER_ADVANCE} timers due by {now_ms}")

    def advance_by(self, delta_ms: int) -> list[Any]:
        return self.advance_to(self.now_ms + delta_ms)

    def timers(self, key: Any = None) -> list[int]:
        """The timestamps of the timers pending for ``key`` (every key's when None), sorted."""
        return sorted(t for t, k in self._timers if key is None or k == key)

    def next_timer(self) -> int | None:
        return min((t for t, _ in self._timers), default=None)

    def state(self, name: str, key: Any) -> dict[Any, Any]:
        """What state ``name`` holds for ``key`` (a ValueState's under ``"value"``, a
        ListState's under ``"items"``, a MapState's entries as they are)."""
        return copy.deepcopy(self._backend.tables[name].get(key, {}))

    def keys(self, name: str) -> set[Any]:
        """The keys that hold something in state ``name``."""
        return set(self._backend.tables[name])

    @property
    def descriptors(self) -> dict[str, tuple[str, str]]:
        """state name -> (kind, type information) of every state the function declared."""
        return dict(self._backend.descriptors)

    def snapshot(self) -> Snapshot:
        """What a checkpoint taken now would hold."""
        return Snapshot(
            copy.deepcopy(self._backend.tables),
            dict(self._backend.descriptors),
            sorted(self._timers, key=lambda timer: timer[0]),
            self.runtime_context.get_attempt_number(),
        )

    def _register(self, key: Any, timestamp: int) -> None:
        if key is None:
            raise RuntimeError("a timer registered outside a key context")
        if (timestamp, key) in self._timers:
            return
        self._timers.add((timestamp, key))
        heapq.heappush(self._queue, (timestamp, next(self._sequence), key))

    def _pop_due(self, now_ms: int) -> tuple[int, Any] | None:
        while self._queue and self._queue[0][0] <= now_ms:
            timestamp, _, key = heapq.heappop(self._queue)
            if (timestamp, key) in self._timers:  # else deleted
                self._timers.discard((timestamp, key))
                return timestamp, key
        return None

    def keyed(self, key: Any) -> _KeyScope:
        """A ``with`` block in which ``key`` is the current key, as in a handler (to read or
        set the function's state from a test)."""
        return _KeyScope(self._backend, key)


class _KeyScope:
    def __init__(self, backend: _Backend, key: Any) -> None:
        self._backend = backend
        self._key = key

    def __enter__(self) -> None:
        self._backend.current_key = self._key

    def __exit__(self, *exc: object) -> None:
        self._backend.current_key = None
