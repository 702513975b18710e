"""The Flink fakes of tests/fakes behave as Flink does where the operators rely on it: state
scoped by key, timers once per key and timestamp, in timestamp order, with their own key."""

from __future__ import annotations

import pytest
from pyflink.common import Row, Types
from pyflink.datastream import KeyedProcessFunction
from pyflink.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)

from tests.fakes import KeyedHarness


class Recorder(KeyedProcessFunction):
    """Keeps what it is told per key and registers the timers its records name."""

    def open(self, runtime_context) -> None:
        self.value = runtime_context.get_state(ValueStateDescriptor("v", Types.STRING()))
        self.items = runtime_context.get_list_state(ListStateDescriptor("l", Types.STRING()))
        self.entries = runtime_context.get_map_state(
            MapStateDescriptor("m", Types.STRING(), Types.LONG()))

    def process_element(self, value, ctx):
        command, _, argument = value.partition(" ")
        if command == "set":
            self.value.update(argument)
        elif command == "timer":
            for at in argument.split(","):
                ctx.timer_service().register_processing_time_timer(int(at))
        elif command == "delete":
            ctx.timer_service().delete_processing_time_timer(int(argument))
        yield ctx.get_current_key(), self.value.value()

    def on_timer(self, timestamp, ctx):
        now = ctx.timer_service().current_processing_time()
        if self.value.value() == "chain" and timestamp < 100:
            ctx.timer_service().register_processing_time_timer(timestamp + 10)
        yield timestamp, ctx.get_current_key(), now


def _harness() -> KeyedHarness:
    return KeyedHarness(Recorder()).open()


def test_state_belongs_to_the_current_key() -> None:
    harness = _harness()
    assert harness.process("a", "set x") == [("a", "x")]
    assert harness.process("b", "get") == [("b", None)]
    assert harness.process("a", "get") == [("a", "x")]
    assert harness.keys("v") == {"a"}


def test_state_is_refused_outside_a_key_context() -> None:
    harness = _harness()
    with pytest.raises(RuntimeError, match="outside a key context"):
        harness.function.value.value()


def test_a_value_read_is_a_copy_and_rows_lose_their_names() -> None:
    harness = _harness()
    context = harness.runtime_context
    state = context.get_state(ValueStateDescriptor(
        "row", Types.ROW_NAMED(["a", "b"], [Types.LONG(), Types.STRING()])))
    entries = harness.function.entries
    with harness.keyed("k"):
        state.update(Row(a=1, b="x"))
        read = state.value()
        assert tuple(read) == (1, "x")
        with pytest.raises(TypeError, match="into dict"):  # no field names
            read.as_dict()
        state.update(None)
        assert state.value() is None
        pickled = context.get_state(ValueStateDescriptor("p", Types.PICKLED_BYTE_ARRAY()))
        pickled.update({"a": [1]})
        pickled.value()["a"].append(2)  # a deserialised copy, as RocksDB gives
        assert pickled.value() == {"a": [1]}
        assert list(harness.function.items.get()) == []
        assert harness.function.items.get()  # an empty generator, as in thread mode
        entries.put("x", 1)
        assert entries.get("missing") is None
        assert list(entries.items()) == [("x", 1)]
    assert harness.keys("row") == set()
    assert harness.keys("p") == {"k"}


def test_a_state_cannot_change_its_type_under_the_same_name() -> None:
    harness = _harness()
    with pytest.raises(ValueError, match="declared as"):
        harness.runtime_context.get_state(ValueStateDescriptor("v", Types.LONG()))


def test_timers_fire_once_per_key_and_timestamp_in_order_with_their_key() -> None:
    harness = _harness()
    harness.process("b", "timer 30,10,10")
    harness.process("a", "timer 10,20")
    harness.process("a", "timer 20")
    assert harness.timers() == [10, 10, 20, 30]
    assert harness.advance_to(25) == [(10, "b", 10), (10, "a", 10), (20, "a", 20)]
    assert harness.now_ms == 25
    assert harness.timers("b") == [30]


def test_a_deleted_timer_does_not_fire() -> None:
    harness = _harness()
    harness.process("a", "timer 10")
    harness.process("a", "delete 10")
    assert harness.advance_to(100) == []


def test_timers_registered_while_firing_fire_in_the_same_advance_when_due() -> None:
    harness = _harness()
    harness.process("a", "set chain")
    harness.process("a", "timer 80")
    assert [fired[0] for fired in harness.advance_to(95)] == [80, 90]
    assert harness.timers("a") == [100]


def test_a_restored_function_sees_the_snapshot_and_its_timers() -> None:
    harness = _harness()
    harness.process("a", "set kept")
    harness.process("a", "timer 50")
    snapshot = harness.snapshot()
    harness.process("a", "set later")
    restored = KeyedHarness(Recorder(), now_ms=60, restore=snapshot).open()
    assert restored.runtime_context.get_attempt_number() == 1
    assert restored.process("a", "get") == [("a", "kept")]
    assert restored.advance_to(60) == [(50, "a", 60)]
