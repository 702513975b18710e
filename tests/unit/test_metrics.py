"""The stages' figures as Flink metrics: names, when and what is sent (no Flink started)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from crawl.progress import RunningMean, StageStatus
from operators.metrics import StageMetrics, metric_name
from tests.fakes import FakeMetricGroup


@pytest.mark.parametrize(
    ("figure", "metric"),
    [
        ("timers", "timers"),
        ("results.FETCHED", "results_FETCHED"),
        ("links.rejected.url:scheme:data", "links_rejected_url_scheme_data"),
        ("errors.timeout:read", "errors_timeout_read"),
        ("send_lag_ms", "send_lag_ms"),
        ("sitemaps.error.bad-xml", "sitemaps_error_bad_xml"),
        ("a b,c=d", "a_b_c_d"),
        ("", "_"),
    ],
)
def test_metric_names_keep_letters_digits_and_underscores(figure: str, metric: str) -> None:
    assert metric_name(figure) == metric


@pytest.fixture
def status(tmp_path: Path):
    status = StageStatus(tmp_path, "fetch", 0, interval=3600)  # written by hand here
    yield status
    status.close()


def test_existing_figures_are_sent_at_once(status: StageStatus) -> None:
    status.count("results.FETCHED", 3)
    status.gauges["queued"] = 7
    group = FakeMetricGroup()
    status.follow(StageMetrics(status, group))
    assert group.values() == {"results_FETCHED": 3, "queued": 7}


def test_figures_are_sent_at_the_first_count_after_a_write(status: StageStatus) -> None:
    group = FakeMetricGroup()
    status.follow(StageMetrics(status, group))
    status.count("timers")
    assert group.gauges == {}  # not before the next write
    status.gauges["in_flight"] = 2
    status.gauge_functions["hosts_active"] = lambda: 4
    status.write()
    assert group.gauges == {}
    status.count("timers")
    assert group.values() == {"timers": 2, "in_flight": 2, "hosts_active": 4}
    assert "count" not in vars(status)  # back to the plain method
    status.count("timers", 5)
    assert group.values()["timers"] == 2
    status.write()
    status.count("timers")
    assert group.values()["timers"] == 8
    assert group.gauges["in_flight"].updates == 1  # unchanged figures are not sent again


def test_figures_are_sent_only_on_the_following_thread(status: StageStatus) -> None:
    group = FakeMetricGroup()
    status.follow(StageMetrics(status, group))
    status.count("urls.in")
    status.write()
    other = threading.Thread(target=status.count, args=("urls.in",))
    other.start()
    other.join()
    assert group.gauges == {}
    status.count("batches.in")
    assert group.values() == {"urls_in": 2, "batches_in": 1}


def test_gauges_send_the_last_write_not_call_the_gauge_function(status: StageStatus) -> None:
    """Sending must not take a running mean away from the status file."""
    mean = RunningMean()
    status.gauge_functions["timer_lateness_ms"] = mean.take
    group = FakeMetricGroup()
    metrics = StageMetrics(status, group)
    status.follow(metrics)
    mean.add(10)
    mean.add(21)
    status.write()
    metrics()
    metrics()
    assert group.values() == {"timer_lateness_ms": 16}  # 15.5, rounded to an int
    assert mean.count == 2


def test_figures_that_map_to_one_name_register_once(status: StageStatus) -> None:
    status.count("links.rejected.a:b")
    status.count("links.rejected.a.b")
    group = FakeMetricGroup()
    metrics = StageMetrics(status, group)
    status.follow(metrics)
    assert list(group.gauges) == ["links_rejected_a_b"]
    assert len(metrics.registered) == 1


def test_counting_costs_nothing_more_when_followed(status: StageStatus) -> None:
    status.follow(lambda: None)
    status.count("pages.FETCHED")
    assert type(status).count is StageStatus.count
    assert "count" not in vars(status)


def test_a_flush_sends_the_figures_as_they_are_now(status: StageStatus) -> None:
    """A stage that falls idle flushes: no count may follow its next write."""
    group = FakeMetricGroup()
    status.follow(StageMetrics(status, group))
    status.gauges["queued"] = 7
    status.write()
    status.count("results.FETCHED")
    assert group.values() == {"queued": 7, "results_FETCHED": 1}
    status.count("results.FETCHED", 6)
    status.gauges["queued"] = 0
    status.flush()
    assert group.values() == {"queued": 0, "results_FETCHED": 7}
    assert "count" not in vars(status)
    other = threading.Thread(target=status.flush)  # only the owner's thread sends
    status.count("results.FETCHED")
    other.start()
    other.join()
    assert group.values()["results_FETCHED"] == 7


def test_a_flush_evaluates_the_gauge_functions_it_is_told_to(status: StageStatus) -> None:
    """The crawl DB's queues are gauge functions: as of the last write they may be a burst
    old, and a stage that falls idle has no later write that a count would send."""
    pending = [5]
    mean = RunningMean()
    status.gauge_functions["pending"] = lambda: pending[0]
    status.gauge_functions["timer_lateness_ms"] = mean.take
    group = FakeMetricGroup()
    status.follow(StageMetrics(status, group))
    mean.add(4)
    status.write()
    status.count("merges")
    assert group.values() == {"pending": 5, "timer_lateness_ms": 4, "merges": 1}
    pending[0] = 0
    mean.add(8)
    status.flush(current=("pending",))
    assert group.values() == {"pending": 0, "timer_lateness_ms": 4, "merges": 1}
    assert mean.take() == 8  # the running mean is left to the next write
