"""The cluster crawl's watcher: the idle rule on a job's metrics, and the stop's retries
(against a scripted REST API; tests/integration/test_cluster.py runs it on a real cluster)."""

from __future__ import annotations

import io
import urllib.parse
from typing import Any

import pytest

from crawl.stages import CRAWLDB_PENDING, FETCH_QUEUED
from job.status import CrawlView
from job.stopper import StopError, figures_of_view, stop_job, wait_until_idle

OPERATOR = "fetch___stream_key_by_map_operator"


class ScriptedRest:
    """A Flink REST API whose crawler metrics follow a script, one step per poll."""

    url = "http://flink:8081"

    def __init__(self, steps: list[dict[str, float]], savepoints: list[dict] = ()) -> None:
        self.steps = steps
        self.polls = 0
        self.savepoints = list(savepoints)
        self.posts: list[tuple[str, Any]] = []
        self.state = "RUNNING"

    def get(self, path: str) -> Any:
        if path == "/jobs/j1":
            return {"name": "pyflink-crawler", "state": self.state, "duration": 1000,
                    "vertices": [{"id": "v1"}]}
        if path == "/jobs/j1/checkpoints":
            return {"counts": {"completed": 1}}
        step = self.steps[min(self.polls, len(self.steps) - 1)]
        if path == "/jobs/j1/vertices/v1/subtasks/metrics":
            return [{"id": f"{OPERATOR}.crawler.{name}"} for name in step]
        if path.startswith("/jobs/j1/vertices/v1/subtasks/metrics?"):
            self.polls += 1
            asked = urllib.parse.parse_qs(path.partition("?")[2])["get"][0].split(",")
            return [{"id": metric, "sum": step[metric.split(".crawler.")[1]],
                     "max": step[metric.split(".crawler.")[1]]} for metric in asked]
        if path.startswith("/jobs/j1/savepoints/"):
            answer = self.savepoints.pop(0)
            if answer.get("operation", {}).get("location"):
                self.state = "FINISHED"
            return answer
        raise AssertionError(path)

    def post(self, path: str, body: Any) -> Any:
        self.posts.append((path, body))
        return {"request-id": f"r{len(self.posts)}"}


def _step(pages: float, queued: float = 0, in_flight: float = 0, pending: float = 0,
          busy: float = 0.0) -> dict[str, float]:
    return {"fetch.results_FETCHED": pages, "process.pages_FETCHED": pages,
            "fetch.queued": queued, "fetch.in_flight": in_flight, "crawldb.pending": pending,
            "crawldb.buffered": 0, "fetch.busy_pct": busy, "fetch.timers": pages * 7}


def test_the_idle_rule_reads_progress_counters_and_queue_gauges() -> None:
    view = CrawlView({f"fetch.{k}": 1.0 for k in ("results_FETCHED", "queued", "busy_pct")}
                     | {"crawldb.pending": 3.0, "crawldb.urls_found": 9.0}, "_", "test")
    figures = figures_of_view(view)
    assert figures.counters == {"fetch.results_FETCHED": 1, "crawldb.urls_found": 9}
    assert (figures.gauge(FETCH_QUEUED.key), figures.gauge(CRAWLDB_PENDING.key)) == (1.0, 3.0)


def test_it_waits_while_anything_is_queued_in_flight_or_moving() -> None:
    # Moving, then queued, then in flight, then still (busy_pct and timers move: not progress).
    steps = [_step(1), _step(5), _step(5, queued=2), _step(5, in_flight=1),
             _step(6, pending=1), _step(6)] + [_step(6, busy=float(i)) for i in range(8)]
    rest = ScriptedRest(steps)
    clock = iter(range(0, 1000, 2))
    out = io.StringIO()
    wait_until_idle(rest, "j1", 10.0, out, clock=lambda: float(next(clock)), sleep=lambda s: None)
    # Polled every 2 s: the last move is at t = 8 s (a page), idle at t = 18 s, the 10th poll.
    assert rest.polls == 10
    assert "idle for 10 s" in out.getvalue()


def test_a_job_that_stops_running_while_awaited_is_an_error() -> None:
    rest = ScriptedRest([_step(1), _step(2)])
    rest.state = "FAILED"
    with pytest.raises(StopError, match="FAILED"):
        wait_until_idle(rest, "j1", 10.0, io.StringIO(), sleep=lambda s: None)


def test_a_failed_stop_is_tried_again_and_the_savepoint_returned() -> None:
    failed = {"status": {"id": "COMPLETED"}, "operation": {"failure-cause": {
        "class": "java.util.concurrent.CompletionException",
        "stack-trace": "FlinkException: An OperatorEvent from an OperatorCoordinator to a "
                       "task was lost"}}}
    done = {"status": {"id": "COMPLETED"}, "operation": {"location": "file:/sp/savepoint-1"}}
    rest = ScriptedRest([_step(1)], [{"status": {"id": "IN_PROGRESS"}}, failed, done])
    out = io.StringIO()
    assert stop_job(rest, "j1", "file:/sp", out, sleep=lambda s: None) == "file:/sp/savepoint-1"
    assert rest.posts == [("/jobs/j1/stop", {"drain": True, "targetDirectory": "file:/sp"})] * 2
    assert "OperatorEvent" in out.getvalue()
    rest = ScriptedRest([_step(1)], [failed] * 3)
    with pytest.raises(StopError, match="could not stop"):
        stop_job(rest, "j1", None, io.StringIO(), sleep=lambda s: None)
    assert rest.posts[0] == ("/jobs/j1/stop", {"drain": True})
