"""The stages' figures as Flink metrics, for the web UI, the REST API and metric reporters.

Every counter and gauge of a stage's :class:`crawl.progress.StageStatus` becomes a Flink gauge
of the operator, in the group ``crawler.<stage>`` (so its identifier ends in
``<operator>.crawler.fetch.results_FETCHED``), registered when the figure first appears
(:meth:`~crawl.progress.StageStatus.watch_names`). They are gauges that read the status's own
dictionaries when Flink asks: counting stays a dictionary update, with no call into the JVM
(PyFlink's thread mode turns each ``Counter.inc`` into one). A counter's gauge only grows.

Flink joins scopes and names with dots, and reporters accept fewer characters still
(Prometheus: letters, digits, ``_`` and ``:``), so a figure's name has every character other
than a letter, digit or ``_`` replaced by ``_``: ``links.rejected.url:scheme:data`` is the
metric ``links_rejected_url_scheme_data``.

The fetch stage also keeps a histogram of fetch durations (``crawler.fetch.latency_ms``: a
Flink ``DescriptiveStatisticsHistogram`` over the last fetches, with its quantiles).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, Protocol

from pyflink.datastream import RuntimeContext

from crawl.progress import StageStatus

__all__ = [
    "GROUP",
    "LatencyHistogram",
    "StageMetrics",
    "fetch_latency_histogram",
    "metric_name",
    "mirror_status",
]

log = logging.getLogger(__name__)

#: The group under each operator's metric group that holds the crawler's metrics.
GROUP = "crawler"
#: Fetch durations the latency histogram keeps (its quantiles are over these).
LATENCY_WINDOW = 1024

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_]")


def metric_name(name: str) -> str:
    """The Flink metric name of the figure ``name`` (see the module docstring)."""
    return _NOT_ALLOWED.sub("_", name) or "_"


class MetricGroup(Protocol):
    """What this module uses of PyFlink's ``MetricGroup``."""

    def add_group(self, name: str, extra: str | None = None) -> MetricGroup: ...

    def gauge(self, name: str, obj: Callable[[], int]) -> None: ...


class StageMetrics:
    """Registers a stage's figures as gauges of ``group`` as they appear (a watcher of
    :meth:`StageStatus.watch_names`)."""

    def __init__(self, status: StageStatus, group: MetricGroup) -> None:
        self._status = status
        self._group = group
        #: metric name -> the figure it shows (two figures cannot share a metric)
        self.registered: dict[str, str] = {}

    def __call__(self, counters: list[str], gauges: list[str]) -> None:
        status = self._status
        for name in counters:
            self._register(name, _counter_reader(status, name))
        for name in gauges:
            self._register(name, _gauge_reader(status, name))

    def _register(self, name: str, reader: Callable[[], int]) -> None:
        metric = metric_name(name)
        if metric in self.registered:
            log.warning(
                "figures %r and %r share the metric name %r: only the first is reported",
                self.registered[metric], name, metric,
            )
            return
        self.registered[metric] = name
        try:
            self._group.gauge(metric, reader)
        except Exception:  # noqa: BLE001 - metrics are advisory; the crawl goes on
            log.exception("could not register the metric %s", metric)


def _counter_reader(status: StageStatus, name: str) -> Callable[[], int]:
    counters = status.counters

    def read() -> int:
        return int(counters.get(name, 0))

    return read


def _gauge_reader(status: StageStatus, name: str) -> Callable[[], int]:
    def read() -> int:
        try:
            return int(round(status.gauge_value(name)))
        except (TypeError, ValueError, OverflowError):
            return 0

    return read


def mirror_status(status: StageStatus, runtime_context: RuntimeContext, stage: str) -> None:
    """Report ``status``'s figures as Flink metrics of the operator, group ``crawler.<stage>``.
    Call at the end of ``open()`` (on the task's thread)."""
    try:
        group = runtime_context.get_metrics_group().add_group(GROUP).add_group(stage)
    except Exception:  # noqa: BLE001 - e.g. a context without metrics: the crawl goes on
        log.exception("no metric group for the %s stage: its figures are not reported", stage)
        return
    status.watch_names(StageMetrics(status, group))


class LatencyHistogram(Protocol):
    def update(self, value: int) -> None: ...


class _NoHistogram:
    def update(self, value: int) -> None:
        pass


def fetch_latency_histogram(
    runtime_context: RuntimeContext, stage: str = "fetch", name: str = "latency_ms"
) -> LatencyHistogram:
    """A Flink histogram ``crawler.<stage>.<name>`` to ``update`` with each fetch's duration.

    PyFlink's Python API has no histogram, and its ``distribution`` in thread mode keeps only
    the last value; so in thread mode this registers Flink's own
    ``DescriptiveStatisticsHistogram`` on the operator's Java metric group. Elsewhere it falls
    back to PyFlink's distribution; where neither exists, updates are ignored.
    """
    try:
        group = runtime_context.get_metrics_group().add_group(GROUP).add_group(stage)
        java_group: Any = getattr(group, "_metrics", None)
        if java_group is not None and hasattr(java_group, "histogram"):
            from pemja import findClass

            histogram_class = findClass(
                "org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram"
            )
            return java_group.histogram(name, histogram_class(LATENCY_WINDOW))
        return group.distribution(name)
    except Exception:  # noqa: BLE001 - metrics are advisory; the crawl goes on
        log.exception("no %s histogram for the %s stage", name, stage)
        return _NoHistogram()
