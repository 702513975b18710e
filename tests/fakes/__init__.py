"""Fakes of what the crawler's operators use from Flink, to test their handlers without a JVM.

:class:`KeyedHarness` runs one keyed function the way Flink's keyed operator does: keyed state
scoped by the current key, processing-time timers de-duplicated per key and timestamp and fired
in timestamp order with the key they were registered under, the subtask's identity and metric
groups. :class:`FakeMetricGroup` stands for a metric group on its own.

Helpers that several test modules share live here too, so that no test module imports
another: :mod:`tests.fakes.crawldb` (the crawl DB operator's keyed state as plain attributes,
found-URL triples, a URL's record), :mod:`tests.fakes.synthweb` (a fingerprint of a synthetic
web) and :mod:`tests.fakes.bvgraph` (a writer of WebGraph's BV format).
"""

from tests.fakes.flink import FakeGauge, FakeMetricGroup, FakeRuntimeContext, KeyedHarness, Snapshot

__all__ = ["FakeGauge", "FakeMetricGroup", "FakeRuntimeContext", "KeyedHarness", "Snapshot"]
