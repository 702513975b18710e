"""Watches a running crawl from outside, as an operator would: its Flink metrics through the
REST API of the MiniCluster (the address from ``out/job.json``) and ``python -m job status``.

Once the crawl has stopped, :meth:`MetricsWatch.check` holds the last figures read against the
crawl's summary (written from the crawl log, not from the figures).
"""

from __future__ import annotations

import io
from pathlib import Path

from crawl.stages import (
    CRAWLDB_KNOWN,
    CRAWLDB_MERGES,
    CRAWLDB_PENDING,
    CRAWLDB_URLS_NEW,
    FETCH_IN_FLIGHT,
    FETCH_LATENCY_MS,
    FETCH_QUEUED,
    FETCH_RESULTS,
    PROCESS_BYTES,
    PROCESS_PAGES,
)
from crawl.status import Status
from job.status import (
    CrawlView,
    RestClient,
    StatusError,
    figures_from_metrics,
    find_job,
    run_status,
)
from tests.integration.crawl_runner import running_job

#: Outcomes a stage may have counted after its last push to Flink (see ``check``), at least;
#: and at most this share of them (what a stage handles between two status writes, about a
#: second, grows with the load of the machine: two runs on a loaded machine were 6 and 9
#: behind of 275).
TAIL = 5
TAIL_SHARE = 0.25


def tail_of(total: int) -> int:
    """How many of ``total`` outcomes a stage may have counted after its last push."""
    return max(TAIL, int(total * TAIL_SHARE))


class MetricsWatch:
    """A watcher for ``run_crawl(..., watch=)``: reads the job's metrics at each call."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.last: CrawlView | None = None
        self.reads = 0
        self.status_text = ""
        self.job_id = ""

    def __call__(self) -> None:
        record = running_job(self.out)
        if record is None:
            return
        rest = RestClient(record["rest"])
        try:
            job = find_job(rest, record["job_id"])
            view = figures_from_metrics(rest, job)
        except StatusError:
            return  # the job is stopping
        self.job_id = job.job_id
        if view.values:
            self.last, self.reads = view, self.reads + 1
        if not self.status_text and view.pages:
            text = io.StringIO()
            assert run_status(self.out, None, None, text) == 0
            self.status_text = text.getvalue()

    def check(self, summary: dict) -> None:
        """The figures read while the crawl ran agree with its ``summary`` (an idle stop)."""
        last = self.last
        assert last is not None
        assert self.reads > 3
        # The crawl was idle for seconds before it stopped, so the last figures are the final
        # ones, but for what a stage counted after its last push (pushes happen at the first
        # count after each status write: a burst that ends a stage's work is sent when it
        # counts again; only the fetch stage knows when it falls idle, and flushes then).
        tail = tail_of(summary["pages"])
        assert summary["pages"] - tail <= last.pages <= summary["pages"]
        for status, pages in summary["pages_by_status"].items():
            assert pages - tail <= last.get(PROCESS_PAGES.member_key(status)) <= pages, status
        fetched = Status.FETCHED.value
        assert last.get(FETCH_RESULTS.member_key(fetched)) >= summary["pages_by_status"][fetched]
        assert last.get(FETCH_QUEUED.key) == 0
        assert last.get(FETCH_IN_FLIGHT.key) == 0
        assert last.get(PROCESS_BYTES.key) > 0
        assert last.get(CRAWLDB_URLS_NEW.key) >= summary["pages"]
        assert last.get(CRAWLDB_MERGES.key) > 0
        assert last.get(CRAWLDB_KNOWN.key) >= last.get(CRAWLDB_URLS_NEW.key)
        assert last.get(CRAWLDB_PENDING.key) <= tail
        # The latency histogram (the REST API gives its statistics, not its count). Fetches on
        # loopback take whole milliseconds, often 0: the median may be 0, the slowest is not.
        latency = FETCH_LATENCY_MS.key
        assert 0 <= last.maxima[f"{latency}_median"] <= last.maxima[f"{latency}_max"]
        assert last.maxima[f"{latency}_max"] > 0
        assert last.maxima[f"{latency}_max"] < 60_000

        status_text = self.status_text
        assert f"job          {self.job_id}  pyflink-crawler  RUNNING" in status_text, status_text
        assert "checkpoints  " in status_text
        assert "(figures from status files in" in status_text
        # After the crawl the command says how it ended without asking Flink.
        text = io.StringIO()
        assert run_status(self.out, None, None, text) == 0
        assert f"job          {self.job_id}  ended " in text.getvalue()
        assert f"pages        {summary['pages']} (" in text.getvalue()
