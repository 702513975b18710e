"""A savepoint taken while the crawl runs stays restorable after the crawl has gone on.

The crawl runs with a tiny DRUM (a merge every few operations) and a short grace time for
replaced crawl DB files; ``python -m job savepoint`` takes a savepoint mid-crawl, and the
crawl goes on to its end, long past the grace time, its merges and loop reader deleting the
files the savepoint names. A second run then resumes from that old savepoint. Judged by the
synthetic web's own request log: nothing the crawl had fetched at the savepoint is fetched
again (a repeat is a page whose first request ended after the savepoint was asked for), and
every reachable page is fetched across the two runs: every URL the savepoint knew, and what
its loop files carried, is still there.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from crawl.savepoint_files import kept_files, savepoint_path
from job.preparation import DEFAULT_FLINK_CONF
from synthweb import SyntheticWebServer, WebConfig, audit_log
from tests.integration.ahead import CrawlsAhead, crawl_ahead
from tests.integration.crawl_runner import PROJECT_ROOT, SHORT_BACKOFF, run_crawl, running_job

pytestmark = pytest.mark.integration

DELAY = 1.0
TOKEN = "pyflink-crawler"
#: Page requests before the savepoint is taken.
REQUESTS_BEFORE_SAVEPOINT = 40
#: How much earlier than the savepoint's request a fetch may have ended and still not be in
#: it (its outcome had not reached the fetch stage's state: as in test_recovery).
SLACK = 1.0
TINY_DRUM = [
    "--set", "crawldb.partitions=2", "--set", "crawldb.buffer_ops=8",
    "--set", "crawldb.block_records=4", "--set", "crawldb.max_deltas=2",
    "--set", "crawldb.max_archives=2", "--set", "crawldb.fsync=false",
    # With the checkpoint timeout below, the shortest grace the launcher accepts.
    "--set", "crawldb.file_grace_seconds=15",
]


class SavepointTaker:
    """A watcher that takes one savepoint with ``python -m job savepoint`` once the crawl
    has made enough page requests."""

    def __init__(self, out: Path, web: SyntheticWebServer) -> None:
        self.out, self.web = out, web
        self.asked_at: float | None = None
        self.location = ""
        self.output = ""

    def __call__(self) -> None:
        if self.asked_at is not None or running_job(self.out) is None:
            return
        pages = [r for r in self.web.request_log() if r.path != "/robots.txt"]
        if len(pages) < REQUESTS_BEFORE_SAVEPOINT:
            return
        self.asked_at = time.time()
        done = subprocess.run(
            [sys.executable, "-m", "job", "savepoint", "--out", str(self.out)],
            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
        )
        self.output = done.stdout + done.stderr
        assert done.returncode == 0, self.output
        self.location = next(line.split(None, 1)[1] for line in done.stdout.splitlines()
                             if line.startswith("savepoint "))


@crawl_ahead("savepoint mid-crawl", long=True)
def _savepoint_crawl(tmp_path: Path) -> dict[str, Any]:
    """The two runs: a savepoint taken mid-crawl by the first, the second resumed from it;
    what the files were after the first run is noted before the second."""
    # A checkpoint timeout of 10 s lets the grace time go down to 15 s ((3 retained + 1) x
    # 1 s interval + 10 s).
    flink_conf = tmp_path / "flink-conf.yaml"
    flink_conf.write_text(
        DEFAULT_FLINK_CONF.read_text(encoding="utf-8").replace(
            "execution.checkpointing.timeout: 2min", "execution.checkpointing.timeout: 10s"),
        encoding="utf-8",
    )
    assert "timeout: 10s" in flink_conf.read_text(encoding="utf-8")
    options = ["--delay", str(DELAY), "--idle-seconds", "6", "--flink-conf", str(flink_conf),
               *SHORT_BACKOFF, *TINY_DRUM]
    out = tmp_path / "out"
    with SyntheticWebServer(WebConfig(seed=7, hosts=12),
                            tmp_path / "requests.jsonl") as web_server:
        seeds = web_server.web.seeds()
        taker = SavepointTaker(out, web_server)
        first = run_crawl(tmp_path, seeds, web_server.proxy_url, *options, watch=taker)
        noted = {
            "taker": taker, "first": first, "first_run": web_server.request_log(),
            "live_crawldb": {p.relative_to(out / "crawldb").as_posix()
                             for p in (out / "crawldb").rglob("*") if p.is_file()},
            "live_loop": {p.name for p in (out / "loop").iterdir()},
            "expected": web_server.web.expected_crawl(seeds, TOKEN),
        }
        if first[0].returncode != 0 or not taker.location:
            return noted  # the test says why
        savepoint = savepoint_path(taker.location)
        noted["kept"] = kept_files(savepoint)
        second = run_crawl(tmp_path, [], web_server.proxy_url, *options,
                           "--resume-from", str(savepoint))
        return {**noted, "savepoint": savepoint, "second": second,
                "records": web_server.request_log()}


@pytest.mark.crawl_ahead("savepoint mid-crawl")
def test_a_savepoint_taken_mid_crawl_restores_its_crawl_after_the_crawl_went_on(
    crawls_ahead: CrawlsAhead,
) -> None:
    crawl = crawls_ahead.result("savepoint mid-crawl")
    taker = crawl["taker"]
    process, summary = crawl["first"]
    assert process.returncode == 0, process.stderr[-3000:]
    assert summary["stop_reason"] == "idle"
    assert taker.location, f"no savepoint taken: {taker.output}"
    first_run = crawl["first_run"]
    savepoint = crawl["savepoint"]
    kept = crawl["kept"]
    assert kept is not None
    assert kept.crawldb
    assert (kept.loop or kept.loop_hidden)
    # The crawl went on long enough to delete files the savepoint names, of both kinds.
    assert set(kept.crawldb) - crawl["live_crawldb"], (
        "no crawl DB file of the savepoint was deleted")
    assert set(kept.loop) - crawl["live_loop"], "no loop file of the savepoint was deleted"
    assert max(r.end for r in first_run) - taker.asked_at > 15, "it did not go on past the grace"

    process, summary = crawl["second"]
    assert process.returncode == 0, process.stderr[-3000:]
    assert f"resuming from {savepoint}" in process.stdout
    assert "put back from the savepoint" in process.stdout, process.stdout
    assert summary["stop_reason"] == "idle"

    records = crawl["records"]
    second_run = records[len(first_run):]
    fetched_at_savepoint = {r.url for r in first_run if r.end < taker.asked_at - SLACK}
    refetched = sorted(fetched_at_savepoint & {r.url for r in second_run
                                               if r.path != "/robots.txt"})
    assert refetched == [], "fetched at the savepoint and again after its restore"
    assert second_run, "the restored crawl fetched nothing"
    # Every reachable page fetched, nothing disallowed, politeness held across both runs; a
    # page fetched twice was first fetched after the savepoint was asked for.
    expected = crawl["expected"]
    after_savepoint = {r.url for r in first_run if r.end >= taker.asked_at - SLACK}
    problems = audit_log(records, expected, min_delay=DELAY)
    repeats = [p for p in problems
               if p.split(": requested ", 1)[0] in after_savepoint and " times" in p]
    assert [p for p in problems if p not in repeats] == []
