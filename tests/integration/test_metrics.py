"""The crawler's Flink metrics and ``python -m job status`` during a crawl on the MiniCluster.

While ``python -m job crawl`` runs against the synthetic web, the test reads the job's metrics
back from the MiniCluster's REST API (its address from ``out/job.json``) and asks the status
command; once the crawl has stopped, the last figures read must agree with the crawl's summary
(written from the crawl log, not from the figures).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from job.status import (
    CrawlView,
    RestClient,
    StatusError,
    figures_from_metrics,
    find_job,
    run_status,
)
from synthweb import SyntheticWebServer
from tests.integration.crawl_runner import PROJECT_ROOT

#: Outcomes a stage may have counted after its last push to Flink (see below).
TAIL = 5


def test_metrics_follow_the_crawl(tmp_path: Path, web_server: SyntheticWebServer) -> None:
    out = tmp_path / "out"
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(web_server.web.seeds()) + "\n", encoding="utf-8")
    child = subprocess.Popen(
        [sys.executable, "-m", "job", "crawl", "--out", str(out), "--seeds", str(seeds),
         "--proxy", web_server.proxy_url, "--delay", "0.2", "--idle-seconds", "6",
         "--parallelism", "2"],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ),
    )
    last: CrawlView | None = None
    reads = 0
    status_text = ""
    job_id = ""
    deadline = time.monotonic() + 240
    try:
        while child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
            try:
                record = json.loads((out / "job.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if record.get("finished"):
                break
            rest = RestClient(record["rest"])
            try:
                job = find_job(rest, record["job_id"])
                view = figures_from_metrics(rest, job)
            except StatusError:
                continue  # the job is stopping
            job_id = job.job_id
            if view.values:
                last, reads = view, reads + 1
            if not status_text and view.pages:
                text = io.StringIO()
                assert run_status(out, None, None, text) == 0
                status_text = text.getvalue()
        stdout, stderr = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["stop_reason"] == "idle"
    assert summary["pages"] > 20
    assert last is not None
    assert reads > 3

    # The crawl was idle for seconds before it stopped, so the last figures are the final
    # ones, but for what a stage counted after its last push (pushes happen at the first count
    # after each status write: a burst that ends a stage's work is sent when it counts again).
    assert summary["pages"] - TAIL <= last.pages <= summary["pages"]
    for status, pages in summary["pages_by_status"].items():
        assert pages - TAIL <= last.get(f"process.pages.{status}") <= pages, status
    assert last.get("fetch.results.FETCHED") >= summary["pages_by_status"]["FETCHED"]
    assert last.get("process.bytes") > 0
    assert last.get("crawldb.urls.new") >= summary["pages"]
    assert last.get("crawldb.merges") > 0
    assert last.get("crawldb.known") >= last.get("crawldb.urls.new")
    # Gauges are pushed like counters: a stage that went idle shows its last pushed value,
    # which may be one burst behind.
    assert last.get("fetch.queued") <= TAIL
    assert last.get("crawldb.pending") <= TAIL
    # The latency histogram (the REST API gives its statistics, not its count). Fetches on
    # loopback take whole milliseconds, often 0: the median may be 0, the slowest is not.
    assert 0 <= last.maxima["fetch.latency_ms_median"] <= last.maxima["fetch.latency_ms_max"]
    assert last.maxima["fetch.latency_ms_max"] > 0
    assert last.maxima["fetch.latency_ms_max"] < 60_000

    assert f"job          {job_id}  pyflink-crawler  RUNNING" in status_text, status_text
    assert "checkpoints  " in status_text
    assert "(figures from status files in" in status_text
    # After the crawl the command says how it ended without asking Flink.
    text = io.StringIO()
    assert run_status(out, None, None, text) == 0
    assert f"job          {job_id}  ended " in text.getvalue()
    assert f"pages        {summary['pages']} (" in text.getvalue()
