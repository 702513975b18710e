"""End-to-end crawls of the synthetic web on the real Flink MiniCluster.

Each test judges a crawl run ahead of it (:mod:`tests.integration.ahead`), side by side with
the others'.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl.archive.crawl_log import parse_line
from crawl.progress import CrawlFigures, read_statuses
from crawl.report import gather_report
from crawl.stages import CRAWL_DB, FETCH_HELD_DOMAIN_QUOTA, PROCESS
from crawl.urls.routing import key_group_of
from job.native_allocator import find_jemalloc
from job.preparation import PROJECT_ROOT
from operators.faults import ENVIRONMENT_VARIABLE
from synthweb import (
    ExpectedCrawl,
    RequestRecord,
    SyntheticWeb,
    SyntheticWebServer,
    WebConfig,
    audit_log,
)
from synthweb.audit import is_page_path
from tests.integration.ahead import CrawlsAhead, crawl_ahead
from tests.integration.crawl_runner import SHORT_BACKOFF, run_crawl, running_job
from tests.integration.flink_logs import deployments, local_cluster_daemons, restarts
from tests.integration.listening import ListeningWatch
from tests.integration.metrics_watch import MetricsWatch
from tests.integration.report_check import check_report_draws

pytestmark = pytest.mark.integration

DELAY = 0.3
TOKEN = "pyflink-crawler"


def _warc_response_list(out: Path) -> list[tuple[str, int]]:
    """(target URI, HTTP status) of every response record (or revisit record: a payload
    archived before) in order, read with digests checked."""
    responses = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                record.content_stream().read()  # reads the payload: digests are checked
                if record.rec_type in ("response", "revisit"):
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    responses.append((uri, int(record.http_headers.get_statuscode())))
    return responses


def _warc_responses(out: Path) -> dict[str, int]:
    """Target URI -> HTTP status of its (last) response record."""
    return dict(_warc_response_list(out))


@dataclasses.dataclass
class Crawled:
    """A run of a crawl of these tests: the launcher's process and summary, and the server's
    log as it stood after the run."""

    process: subprocess.CompletedProcess[str]
    summary: dict
    records: list[RequestRecord]


@dataclasses.dataclass
class PlainWebCrawl:
    """A crawl (or the runs of one) of the 12-host web (seed 7), and what the test judges of
    it: the web, its ground truth, the output directory, and anything noted along the way."""

    web: SyntheticWeb
    expected: ExpectedCrawl
    out: Path
    runs: list[Crawled]
    noted: dict[str, Any] = dataclasses.field(default_factory=dict)


def _plain_web(tmp_path: Path) -> SyntheticWebServer:
    return SyntheticWebServer(WebConfig(seed=7, hosts=12), tmp_path / "requests.jsonl")


@crawl_ahead("default crawl")
def _default_crawl(tmp_path: Path) -> PlainWebCrawl:
    """The crawl of ``test_crawl_fetches_every_reachable_page_politely_and_shows_its_figures``,
    with the watchers that looked at it while it ran."""
    with _plain_web(tmp_path) as web_server:
        seeds = web_server.web.seeds()
        watch = MetricsWatch(tmp_path / "out")
        sockets = ListeningWatch(tmp_path / "out")
        process, summary = run_crawl(
            tmp_path, seeds, web_server.proxy_url, "--delay", str(DELAY), "--idle-seconds", "6",
            *SHORT_BACKOFF, watch=lambda: (watch(), sockets()),
        )
        return PlainWebCrawl(
            web_server.web, web_server.web.expected_crawl(seeds, TOKEN), tmp_path / "out",
            [Crawled(process, summary, web_server.request_log())],
            {"metrics": watch, "sockets": sockets},
        )


@pytest.mark.crawl_ahead("default crawl")
def test_crawl_fetches_every_reachable_page_politely_and_shows_its_figures(
    crawls_ahead: CrawlsAhead,
) -> None:
    """The default crawl of the 12-host web (short host back-offs aside), watched while it runs
    through its Flink metrics and ``python -m job status`` (``metrics_watch``), and through the
    sockets it listens on."""
    crawl: PlainWebCrawl = crawls_ahead.result("default crawl")
    (run,) = crawl.runs
    process, summary = run.process, run.summary
    watch, sockets = crawl.noted["metrics"], crawl.noted["sockets"]
    assert process.returncode == 0, process.stderr[-3000:]
    # The run ends without noise: no traceback, not even one Python ignores at shutdown (on
    # Python 3.12 PyFlink's loopback worker pool, had it been started, printed one).
    assert "Traceback" not in process.stderr, process.stderr[-3000:]
    assert "Exception ignored" not in process.stderr, process.stderr[-3000:]
    assert summary["stop_reason"] == "idle"
    assert summary["pages"] > 20
    watch.check(summary)
    # Nothing of a local run listens beyond this machine (crawl.flink_bind_address): the REST
    # API (seen while the MiniCluster ran), the blob server, PyFlink's own servers.
    assert sockets.rest.startswith("http://127.0.0.1:"), sockets.rest
    assert int(sockets.rest.rsplit(":", 1)[1]) in {listener.port for listener in sockets.seen}
    assert [str(listener) for listener in sorted(sockets.seen) if not listener.loopback] == []
    # crawl.native_allocator auto: jemalloc where this machine has it.
    jemalloc = find_jemalloc()
    assert (f"native memory: jemalloc ({jemalloc})" if jemalloc else
            "native memory: the C library's malloc, no jemalloc found") in process.stdout

    expected = crawl.expected
    records = run.records
    # The server's own log: robots.txt first per host, nothing disallowed, no overlapping
    # requests per host, starts at least the delay (and 2x the last response time) apart,
    # every expected URL requested exactly once with the expected status.
    problems = audit_log(records, expected, min_delay=DELAY, response_time_factor=2.0)
    assert problems == []

    out = crawl.out
    assert not list((out / "warc").glob("*.open")), "a WARC file was left open"
    # Consumed loop files are deleted (the last ones may still wait for two checkpoints).
    assert len([p for p in (out / "loop").iterdir() if not p.name.startswith(".")]) <= 2
    responses = _warc_responses(out)
    html_pages = {
        url for url, status in expected.fetch.items()
        if status == 200 and crawl.web.page(url).content_type.startswith("text/html")
    }
    assert html_pages, "the test web should have HTML pages"
    missing = html_pages - responses.keys()
    assert not missing, f"200 HTML pages without a response record: {sorted(missing)[:5]}"
    assert all(responses[url] == 200 for url in html_pages)

    log_lines = [
        parse_line(line)
        for path in (out / "logs").glob("crawl-*.log")
        for line in path.read_text().splitlines()
    ]
    logged_pages = {e["url"] for e in log_lines if not e["hops"].endswith("P")}
    assert set(expected.fetch) <= logged_pages
    denied = {e["url"] for e in log_lines if e["status"].value == "ROBOTS_DENIED"}
    assert denied <= set(expected.never)

    # The report written at the crawl's end (crawl.report) counts what the log holds, and
    # every chart of it draws in a browser.
    assert f"report          {out / 'report.html'}" in process.stdout
    report = gather_report(out)
    assert report.log.pages == summary["pages"]
    assert report.log.robots_fetches == summary["robots_fetches"]
    assert report.log.by_status == summary["pages_by_status"]
    check_report_draws(out, {"timeline", "status", "reasons", "hosts", "latency", "budget",
                             "content_types", "sizes", "novelty"})


BUDGET = 40
#: The third run's delay: long enough for the crawl to go on through a TaskManager's loss.
SLOW_DELAY = 1.5
#: The third run's page requests before the kill, and after it before the interrupt.
PAGES_BEFORE_KILL, PAGES_AFTER_KILL = 3, 8


def _taskmanagers(out: Path) -> list[int]:
    """The live TaskManagers of the crawl's local cluster (their JVMs)."""
    found = []
    for pid in local_cluster_daemons(out):
        try:
            if b"TaskManagerRunner" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue  # ended since it was listed
    return found


def _pages(records: list[RequestRecord]) -> list[RequestRecord]:
    return [r for r in records if is_page_path(r.path)]


@crawl_ahead("page budget, rescaled 2-1-2-1", long=True)
def _budget_crawl(tmp_path: Path) -> PlainWebCrawl:
    """A crawl of BUDGET pages at parallelism 2 (on the local cluster), resumed at parallelism
    1 (the MiniCluster) with twice the budget, then at parallelism 2 without one, where a
    TaskManager is killed (SIGKILL) once pages are fetched and, once pages are fetched again,
    the command is interrupted as Ctrl-C in a terminal does (SIGINT to its process group),
    then at parallelism 1 to the end. What each run left is noted before the next."""
    out = tmp_path / "out"
    # Short heartbeats: the JobManager notices the dead TaskManager within seconds (Flink's
    # default: 50).
    flink_conf = tmp_path / "flink-conf.yaml"
    flink_conf.write_text(
        (PROJECT_ROOT / "flink-conf.yaml").read_text(encoding="utf-8")
        + "heartbeat.interval: 1000\nheartbeat.timeout: 5000\n", encoding="utf-8")
    with _plain_web(tmp_path) as web_server:
        seeds = web_server.web.seeds()
        runs = []
        process, summary = run_crawl(
            tmp_path, seeds, web_server.proxy_url,
            "--delay", str(DELAY), "--max-pages", str(BUDGET), "--parallelism", "2",
            "--idle-seconds", "6", *SHORT_BACKOFF,
        )
        runs.append(Crawled(process, summary, web_server.request_log()))
        noted: dict[str, Any] = {
            "open after the first run": list((out / "warc").glob("*.open")),
            "responses after the first run": len(_warc_response_list(out)),
            "deployments of the first run": deployments(out / "logs" / "flink"),
            "daemons after the first run": local_cluster_daemons(out)}
        process, summary = run_crawl(
            tmp_path, [], web_server.proxy_url,
            "--resume", "--delay", str(DELAY), "--parallelism", "1", "--idle-seconds", "6",
            "--max-pages", str(2 * BUDGET), *SHORT_BACKOFF,
        )
        runs.append(Crawled(process, summary, web_server.request_log()))
        before = len(_pages(runs[-1].records))

        def kill_then_interrupt() -> None:
            job = running_job(out)
            if job is None or "interrupted" in noted:
                return
            pages = len(_pages(web_server.request_log())) - before
            taskmanagers = _taskmanagers(out)
            if "killed" not in noted:
                if pages >= PAGES_BEFORE_KILL and len(taskmanagers) == 2:
                    os.kill(taskmanagers[0], signal.SIGKILL)
                    noted.update(killed=taskmanagers[0], pages_at_kill=pages)
            elif (pages >= noted["pages_at_kill"] + PAGES_AFTER_KILL and len(taskmanagers) == 2
                  and noted["killed"] not in taskmanagers):
                os.killpg(job["pid"], signal.SIGINT)  # a session of its own: its group's id
                noted["interrupted"] = pages

        process, summary = run_crawl(
            tmp_path, [], web_server.proxy_url,
            "--resume", "--delay", str(SLOW_DELAY), "--parallelism", "2", "--idle-seconds", "6",
            "--flink-conf", str(flink_conf), *SHORT_BACKOFF,
            watch=kill_then_interrupt, own_session=True,
        )
        runs.append(Crawled(process, summary, web_server.request_log()))
        noted["daemons after the third run"] = local_cluster_daemons(out)
        noted["restarts"] = restarts(out / "logs" / "flink")
        noted["open after the third run"] = list((out / "warc").glob("*.open"))
        process, summary = run_crawl(
            tmp_path, [], web_server.proxy_url,
            "--resume", "--delay", str(DELAY), "--parallelism", "1", "--idle-seconds", "6",
            *SHORT_BACKOFF,
        )
        runs.append(Crawled(process, summary, web_server.request_log()))
        return PlainWebCrawl(web_server.web, web_server.web.expected_crawl(seeds, TOKEN), out,
                             runs, noted)


@pytest.mark.crawl_ahead("page budget, rescaled 2-1-2-1")
def test_page_budget_is_exact_across_parallel_subtasks_and_resumes_rescaled_2_1_2_1_complete(
    crawls_ahead: CrawlsAhead,
) -> None:
    crawl: PlainWebCrawl = crawls_ahead.result("page budget, rescaled 2-1-2-1")
    first, second, third, fourth = crawl.runs
    assert first.process.returncode == 0, first.process.stderr[-3000:]
    assert first.summary["stop_reason"] == "page budget reached"

    records = first.records
    # The budget counts pages: robots.txt and the hosts' not-found probes are none.
    assert len(_pages(records)) == BUDGET
    expected = crawl.expected
    assert audit_log(records, expected, min_delay=DELAY, complete=False) == []

    assert not crawl.noted["open after the first run"]
    # At parallelism 2 the crawl ran on a local cluster of two TaskManagers, each stage's two
    # subtasks on both (an embedded Python interpreter each), and the cluster's daemons
    # ended with the crawl.
    assert "starting a local Flink cluster: a JobManager and 2 TaskManagers" in (
        first.process.stdout)
    taskmanagers = crawl.noted["deployments of the first run"]
    for stage in ("fetch", "process", "crawl-db"):
        assert len({taskmanagers[stage, subtask] for subtask in (1, 2)}) == 2, taskmanagers
    assert crawl.noted["daemons after the first run"] == []
    # One response or revisit record per request (robots.txt asked again after a 5xx
    # included).
    assert crawl.noted["responses after the first run"] == len(records)

    # Resume from the savepoint at parallelism 1 with a larger budget (the ledger carries
    # over: 40 more pages): the key groups of the crawl DB partitions, the hosts' queues and
    # the URLs waiting in the crawl DB move between subtasks, and the crawl goes on where it
    # stopped, every page fetched exactly once (a stop with a savepoint drains: nothing in
    # flight).
    process, summary = second.process, second.summary
    assert process.returncode == 0, process.stderr[-3000:]
    assert "resuming from" in process.stdout
    assert "local Flink cluster" not in process.stdout  # parallelism 1: the MiniCluster
    assert summary["stop_reason"] == "page budget reached"
    records = second.records
    assert len(_pages(records)) == 2 * BUDGET
    assert audit_log(records, expected, min_delay=DELAY, complete=False) == []

    # At parallelism 2 again, on a new local cluster: the command starts a TaskManager in
    # place of the one killed and the job goes on from its last checkpoint; the terminal's
    # SIGINT reaches the command (and its JVM, which ignores it), not the daemons, which the
    # stop with a savepoint needs; then they end with it.
    assert "interrupted" in crawl.noted, crawl.noted
    process, summary = third.process, third.summary
    assert process.returncode == 0, process.stderr[-3000:]
    assert "resuming from" in process.stdout
    assert "starting a local Flink cluster" in process.stdout
    assert "a TaskManager of the local Flink cluster exited with status" in process.stdout
    assert "interrupted: stopping with a savepoint" in process.stdout
    assert summary["stop_reason"] == "interrupted"
    assert not crawl.noted["open after the third run"]
    assert crawl.noted["daemons after the third run"] == []

    # Then to the end at parallelism 1: every page fetched, politely throughout. The only
    # pages fetched twice were requested in the third run by the attempt that the kill failed
    # (the surviving TaskManager's tasks fetch until they are cancelled, after the failover
    # began) and again once the job ran again (the restored checkpoint did not know them
    # done), or before the
    # interrupt (a stop at once, unlike the budget's and idleness', which wait until nothing
    # is in flight: the savepoint has the fetch as not done), and again after it.
    process, summary = fourth.process, fourth.summary
    assert process.returncode == 0, process.stderr[-3000:]
    assert summary["stop_reason"] == "idle"
    problems = audit_log(fourth.records, expected, min_delay=DELAY)
    assert all(re.search(r": requested 2 times", problem) for problem in problems), problems
    later = fourth.records[len(second.records):]
    in_third = {r.url for r in third.records[len(second.records):]}
    in_fourth = {r.url for r in fourth.records[len(third.records):]}
    for problem in problems:
        url = problem.split(": requested", 1)[0]
        starts = sorted(r.start for r in later if r.url == url)
        assert len(starts) == 2, (problem, starts)
        at_a_restart = any(starts[0] < running_again < starts[1]
                           for _, running_again in crawl.noted["restarts"])
        at_the_interrupt = url in in_third and url in in_fourth
        assert at_a_restart or at_the_interrupt, (problem, starts, crawl.noted["restarts"])
    assert crawl.noted["restarts"], "the kill restarted no job"
    pages_before = {r.url for r in _pages(second.records)}
    assert not pages_before & {r.url for r in _pages(later)}
    assert not list((crawl.out / "warc").glob("*.open"))


@crawl_ahead("tiny DRUM, two failures")
def _tiny_drum_crawl(tmp_path: Path) -> PlainWebCrawl:
    """The crawl DB with tiny DRUM buffers, the crawl DB stage and then the process stage
    failing once each mid-crawl."""
    tiny_drum = [
        "--set", "crawldb.partitions=2", "--set", "crawldb.buffer_ops=8",
        "--set", "crawldb.block_records=4", "--set", "crawldb.max_deltas=2",
        "--set", "crawldb.max_archives=2", "--set", "crawldb.fsync=false",
    ]
    with _plain_web(tmp_path) as web_server:
        seeds = web_server.web.seeds()
        process, summary = run_crawl(
            tmp_path, seeds, web_server.proxy_url, "--delay", str(DELAY), "--idle-seconds", "6",
            *SHORT_BACKOFF, *tiny_drum, env={ENVIRONMENT_VARIABLE: "crawl-db:50,process:90"},
        )
        return PlainWebCrawl(web_server.web, web_server.web.expected_crawl(seeds, TOKEN),
                             tmp_path / "out", [Crawled(process, summary,
                                                        web_server.request_log())])


@pytest.mark.crawl_ahead("tiny DRUM, two failures")
def test_crawl_recovers_from_failures_with_a_tiny_drum_without_losing_a_url(
    crawls_ahead: CrawlsAhead,
) -> None:
    """The crawl DB runs with tiny DRUM buffers (merges, major merges, archiving and
    compaction all the time); the crawl DB stage and then the process stage fail once each
    mid-crawl; the job restores its last checkpoint each time and finishes: every reachable
    page fetched, repeats only within the in-flight window."""
    crawl: PlainWebCrawl = crawls_ahead.result("tiny DRUM, two failures")
    (run,) = crawl.runs
    process, summary = run.process, run.summary
    assert process.returncode == 0, process.stderr[-3000:]
    assert summary["stop_reason"] == "idle"
    out = crawl.out
    for stage in (CRAWL_DB.uid, PROCESS.uid):
        assert (out / "faults" / f"fired-{stage}").exists(), f"no failure injected in {stage}"
    flink_log = "".join(p.read_text() for p in (out / "logs" / "flink").glob("*.log"))
    for stage in (CRAWL_DB.uid, PROCESS.uid):
        assert f"failure injected by {ENVIRONMENT_VARIABLE} (fired-{stage})" in flink_log
    assert "switched from state RESTARTING to RUNNING" in flink_log

    expected = crawl.expected
    problems = audit_log(run.records, expected, min_delay=DELAY)
    repeats = [p for p in problems if "requested" in p and "times" in p]
    assert [p for p in problems if p not in repeats] == []
    # Fetches in flight or done since the last checkpoint before a failure may be repeated, and
    # only those: each repeated URL was first requested between the moment the last checkpoint
    # completed before a failure was taken (its completion less its duration; 1 s more for the
    # barrier to pass the stages) and the restart. How many that is depends on the machine's
    # speed (20-30 URLs a failure alone, 74 in all beside another crawl); a crawl that lost its
    # URL-seen state would repeat URLs fetched before the last checkpoint too.
    windows = _replay_windows(flink_log)
    assert len(windows) == 2, windows
    first_request: dict[str, float] = {}
    for record in sorted(run.records, key=lambda r: r.start):
        first_request.setdefault(f"http://{record.host}{record.path}", record.start)
    for repeat in repeats:
        url = repeat.split(": requested")[0]
        assert any(taken - 1.0 <= first_request[url] <= restarted
                   for taken, restarted in windows), (url, first_request[url], windows)

    assert not list((out / "warc").glob("*.open"))
    responses = _warc_responses(out)
    assert set(expected.fetch) <= responses.keys()

    # The DRUM really worked hard: its own counters (since the last restart) show it.
    drum = json.loads((out / "status" / "crawldb-00000.json").read_text())["counters"]
    assert drum["merges.major"] >= 5
    assert drum["urls.archived"] > 0
    assert drum["archives.compacted"] > 0


#: The grouped crawls' delay, and the domain quota of the crawl grouped by domain: 3 pages in
#: any 2 s, where the delay alone would let about 12 start (0.15 s apart, each answered in a few
#: milliseconds), so that the quota is what paces that crawl, even on a machine so loaded that
#: a request takes four times as long to go round.
GROUPED_DELAY = 0.15
QUOTA_PAGES, QUOTA_SECONDS = 3, 2.0


@dataclasses.dataclass
class GroupedCrawl:
    """A crawl of the grouped-hosts tests, and the server's log of it in order of start."""

    process: subprocess.CompletedProcess[str]
    summary: dict
    records: list[RequestRecord]
    expected: ExpectedCrawl
    out: Path


def _grouped_crawl(tmp_path: Path, group_by: str) -> GroupedCrawl:
    # 6 hosts of about 5 pages: with the quota, 30-odd pages are several of its windows.
    config = WebConfig(seed=3, hosts=6, pages_per_host=5)
    with SyntheticWebServer(config, tmp_path / "requests.jsonl") as server:
        seeds = server.web.seeds()
        options = ["--set", f"politeness.group_by={group_by}"]
        if group_by == "ip":  # the proxy would hide the addresses: connect to them instead
            port = server.proxy_url.rsplit(":", 1)[1]
            proxy = None
            options += ["--set", f"fetch.connect_to=::127.0.0.1:{port}"]
        else:
            proxy = server.proxy_url
            options += ["--set", f"politeness.domain_quota_pages={QUOTA_PAGES}",
                        "--set", f"politeness.domain_quota_seconds={QUOTA_SECONDS}"]
        # Two fetch subtasks on the MiniCluster (the local cluster's start, which the
        # rescaled crawl tests, would only lengthen the suite: the groups are keyed state).
        process, summary = run_crawl(
            tmp_path, seeds, proxy,
            "--delay", str(GROUPED_DELAY), "--idle-seconds", "6", "--parallelism", "2",
            "--set", "crawl.local_runtime=minicluster",
            "--set", "politeness.response_time_factor=0", *SHORT_BACKOFF, *options,
        )
        records = sorted(server.request_log(), key=lambda r: r.start)
        expected = server.web.expected_crawl(seeds, TOKEN)
    return GroupedCrawl(process, summary, records, expected, tmp_path / "out")


# Two crawls, side by side with the others' (each against a web of its own, judged alone).
crawl_ahead("hosts grouped by domain", long=True)(
    lambda tmp_path: _grouped_crawl(tmp_path, "domain"))
crawl_ahead("hosts grouped by ip")(lambda tmp_path: _grouped_crawl(tmp_path, "ip"))


@pytest.mark.parametrize("group_by", [
    pytest.param("domain", marks=pytest.mark.crawl_ahead("hosts grouped by domain")),
    pytest.param("ip", marks=pytest.mark.crawl_ahead("hosts grouped by ip")),
])
def test_grouped_hosts_take_turns_across_fetch_subtasks(
    crawls_ahead: CrawlsAhead, group_by: str
) -> None:
    """``politeness.group_by: domain`` or ``ip`` with two fetch subtasks: every host of the
    synthetic web is under synth.test and (through ``fetch.connect_to``) at 127.0.0.1, so the
    whole crawl is one request at a time, each starting at least the delay after the previous
    one ended, whichever hosts they went to and whichever subtasks hold those hosts.

    By domain, with a domain quota too (``politeness.domain_quota_pages``): across all the
    domain's hosts at most that many page requests start in any window of
    ``domain_quota_seconds``, and it is the quota that paces the crawl."""
    crawl: GroupedCrawl = crawls_ahead.result(f"hosts grouped by {group_by}")
    assert crawl.process.returncode == 0, crawl.process.stderr[-3000:]
    assert crawl.summary["stop_reason"] == "idle"
    records = crawl.records
    assert audit_log(records, crawl.expected, min_delay=GROUPED_DELAY) == []
    hosts = {r.host for r in records}
    assert len(hosts) >= 6
    # The hosts were fetched by both subtasks: without the group's key a clock per subtask
    # would let two requests overlap (partition of the default 256 key groups by 2 subtasks).
    subtasks = {key_group_of(host, 256) * 2 // 256 for host in hosts}
    assert subtasks == {0, 1}
    tolerance = 0.02
    for previous, current in zip(records, records[1:], strict=False):
        assert current.start >= previous.end + GROUPED_DELAY - tolerance, (
            f"{current.url} started {current.start - previous.end:.3f}s after "
            f"{previous.url} ended"
        )
    if group_by != "domain":
        return
    pages = [index for index, record in enumerate(records) if record.path != "/robots.txt"]
    assert len(pages) > 3 * QUOTA_PAGES  # the quota was reached several times
    assert pages[0] > 0  # robots.txt came first
    # The quota, judged from the server's log without trusting its clock to see a request
    # start when the crawler started it (on a loaded machine a request head may reach the
    # server a while after): the crawler counts a page against the quota when it decides to
    # start it, which is after the request before it reached the server (one at a time) and
    # before the page's own request does; QUOTA_PAGES pages later, the page it decides to start
    # is at least QUOTA_SECONDS after that. So from the start of the request before a page to
    # the start of the page QUOTA_PAGES after it, QUOTA_SECONDS at least (a millisecond
    # allowed: the crawler's clock counts whole ones).
    for first, next_after_quota in zip(pages, pages[QUOTA_PAGES:], strict=False):
        before = records[first - 1]
        waited = records[next_after_quota].start - before.start
        assert waited >= QUOTA_SECONDS - 0.001, (
            f"{QUOTA_PAGES} pages from {records[first].url} on, then "
            f"{records[next_after_quota].url} {waited:.3f}s after {before.url} started"
        )
    # ...and it was the quota that paced the crawl: the fetch stage's own count of the times
    # the quota, and not the delay (or anything else), held a host back.
    figures = CrawlFigures.from_statuses(read_statuses(crawl.out / "status"))
    assert figures.counter(FETCH_HELD_DOMAIN_QUOTA.key) > 0


def _replay_windows(flink_log: str) -> list[tuple[float, float]]:
    """For each restart of the job in a Flink log: (when the state it restored was taken, when
    it ran again), seconds since the epoch; a checkpoint's state is taken when it is triggered,
    its completion less its duration. (Flink logs in the machine's local time, as ``datetime``
    reads a naive time.)"""

    def moment(line: str) -> float:
        return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()

    taken: list[float] = []
    windows: list[tuple[float, float]] = []
    failed_at = None
    for line in flink_log.splitlines():
        completed = _COMPLETED_CHECKPOINT.search(line)
        if completed:
            taken.append(moment(line) - int(completed.group(1)) / 1000)
        elif "switched from state RUNNING to RESTARTING" in line:
            failed_at = moment(line)
        elif "switched from state RESTARTING to RUNNING" in line and failed_at is not None:
            windows.append((max((t for t in taken if t < failed_at), default=0.0), moment(line)))
            failed_at = None
    return windows


_COMPLETED_CHECKPOINT = re.compile(r"Completed checkpoint \d+ .*checkpointDuration=(\d+) ms")
