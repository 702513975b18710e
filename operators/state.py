"""Keyed state descriptors the stages share."""

from __future__ import annotations

from pyflink.common import Types
from pyflink.common.time import Duration, Time
from pyflink.datastream.state import StateTtlConfig, ValueStateDescriptor

__all__ = ["expiring_string_state"]

#: State entries RocksDB's TTL compaction filter processes between two reads of the time
#: (Flink's default).
_COMPACTION_FILTER_QUERY_ENTRIES = 1000


def expiring_string_state(name: str, window_seconds: float) -> ValueStateDescriptor:
    """A string value state: with a window, a value expires that long after it was last
    written or read (never returned once expired; RocksDB drops it at compaction). Call it in
    a TaskManager (``open()``): see below."""
    descriptor = ValueStateDescriptor(name, Types.STRING())
    if window_seconds > 0:
        # PyFlink makes the default cleanup strategies' Durations (the RocksDB compaction
        # filter's periodic compaction time) through the py4j gateway, which a TaskManager of
        # a cluster does not have (it tries to start one, and the task fails). So the defaults
        # are turned off and the compaction filter, what cleans expired entries from RocksDB,
        # is asked for with a Duration made through PemJa, the TaskManager's own JVM.
        from pyflink.fn_execution.embedded.java_utils import JDuration

        descriptor.enable_time_to_live(
            StateTtlConfig.new_builder(Time.milliseconds(int(window_seconds * 1000)))
            .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
            .set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
            .disable_cleanup_in_background()
            .cleanup_in_rocksdb_compact_filter(
                _COMPACTION_FILTER_QUERY_ENTRIES, Duration(JDuration.ofDays(30))
            )
            .build()
        )
    return descriptor
