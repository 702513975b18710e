"""The stages' figures as Flink metrics, for the web UI, the REST API and metric reporters.

Every counter and gauge of a stage's :class:`crawl.progress.StageStatus` becomes a Flink gauge
of the operator, in the group ``crawler.<stage>`` (so its identifier ends in
``<operator>.crawler.fetch.results_FETCHED``), registered when the figure first appears. The
values are pushed: after each write of the status file, the stage's next count copies the
figures that changed into Java-side gauges (:meth:`~crawl.progress.StageStatus.follow`), so
Flink's figures are about a second old while the stage works, counting stays a dictionary
update, and no Flink thread ever calls Python. The fetch stage also pushes when it falls idle
(nothing queued, nothing in flight: :meth:`~crawl.progress.StageStatus.flush`), so its last
figures are its final ones. (PyFlink's own thread-mode gauges call the
Python function from Flink's metric thread, and reading them through the REST API crashed
the JVM in ``take_gil``; its ``Counter.inc`` is one call into the JVM per count.) A counter's
gauge only grows.

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
from typing import Any, Protocol

from pyflink.datastream import RuntimeContext

from crawl.progress import StageStatus
from crawl.stages import FETCH, FETCH_LATENCY_MS

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

    def distribution(self, name: str) -> Any: ...


class StageMetrics:
    """Copies a stage's figures into gauges of ``group`` (a follower of
    :meth:`StageStatus.follow`; runs on the task's thread).

    Each figure's gauge is PyFlink's ``distribution``: in thread mode a Java gauge holding the
    last value it was given. Only figures that changed since the last copy are sent.
    """

    def __init__(self, status: StageStatus, group: MetricGroup) -> None:
        self._status = status
        self._group = group
        #: metric name -> the figure it shows (two figures cannot share a metric)
        self.registered: dict[str, str] = {}
        self._gauges: dict[str, Any] = {}
        self._sent: dict[str, int] = {}

    def __call__(self) -> None:
        status = self._status
        for name, value in list(status.counters.items()):
            self._send(name, value)
        for name in list(status.gauges.keys() | status.gauge_values.keys()):
            self._send(name, status.gauge_value(name))

    def _send(self, name: str, value: float) -> None:
        try:
            number = int(round(value))
        except (TypeError, ValueError, OverflowError):
            return
        if self._sent.get(name) == number:
            return
        gauge = self._gauges.get(name)
        if gauge is None:
            gauge = self._register(name)
            if gauge is None:
                return
        try:
            gauge.update(number)
        except Exception:  # noqa: BLE001 - metrics are advisory; the crawl goes on
            log.exception("could not update the metric of %s", name)
        self._sent[name] = number

    def _register(self, name: str) -> Any:
        metric = metric_name(name)
        if metric in self.registered:
            log.warning(
                "figures %r and %r share the metric name %r: only the first is reported",
                self.registered[metric], name, metric,
            )
            self._sent[name] = 0
            self._gauges[name] = _NoHistogram()
            return None
        self.registered[metric] = name
        try:
            gauge = self._group.distribution(metric)
        except Exception:  # noqa: BLE001 - metrics are advisory; the crawl goes on
            log.exception("could not register the metric %s", metric)
            gauge = _NoHistogram()
        self._gauges[name] = gauge
        return gauge


def mirror_status(status: StageStatus, runtime_context: RuntimeContext, stage: str) -> None:
    """Report ``status``'s figures as Flink metrics of the operator, group ``crawler.<stage>``.
    Call at the end of ``open()`` (on the task's thread)."""
    try:
        group = runtime_context.get_metrics_group().add_group(GROUP).add_group(stage)
    except Exception:  # noqa: BLE001 - e.g. a context without metrics: the crawl goes on
        log.exception("no metric group for the %s stage: its figures are not reported", stage)
        return
    status.follow(StageMetrics(status, group))


class LatencyHistogram(Protocol):
    def update(self, value: int) -> None: ...


class _NoHistogram:
    def update(self, value: int) -> None:
        pass


def fetch_latency_histogram(
    runtime_context: RuntimeContext, stage: str = FETCH.figures, name: str = FETCH_LATENCY_MS.name
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
