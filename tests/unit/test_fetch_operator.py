"""The fetch stage's handlers (operators/fetch.py) over the Flink fakes, fetching from the
synthetic web on loopback: what a batch leaves in state and timers, the wake-ups that fetch
robots.txt first, then each URL once and the not-found probe after the first, a fetch lost
with its attempt, timers that fire while the job drains, and the state layout a savepoint
restores."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyflink.common import Row

from crawl.config import Config, load_config
from crawl.content.soft404 import NotFoundPrint
from crawl.fetch_requests import QueueEntry, encode_batch
from crawl.frontier.scheduler import HOST_ROW_FIELDS, LEASE_ROBOTS, probe_url
from crawl.hops import NOT_FOUND_PROBE, PREREQUISITE
from crawl.status import Status
from operators.fetch import FetchFunction, FetchSettings
from synthweb import SyntheticWebServer, WebConfig
from synthweb.robots import RobotsKind
from tests.fakes import KeyedHarness, Snapshot

WAKE_MS = HOST_ROW_FIELDS.index("wake_ms")
LEASE_KIND = HOST_ROW_FIELDS.index("lease_kind")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyntheticWebServer]:
    log = tmp_path_factory.mktemp("web") / "requests.jsonl"
    with SyntheticWebServer(WebConfig(seed=7, hosts=12), log) as running:
        yield running


@pytest.fixture(scope="module")
def soft_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyntheticWebServer]:
    """A web of many domains, some of whose hosts answer any path with a page."""
    log = tmp_path_factory.mktemp("web") / "requests.jsonl"
    with SyntheticWebServer(WebConfig(seed=2, hosts=12).with_multi_domain_profile(), log) as web:
        yield web


@pytest.fixture(scope="module")
def host(server: SyntheticWebServer) -> str:
    """A host without robots.txt (everything allowed) whose pages ``/`` and ``/p/2`` exist."""
    host = server.web.hosts_with_robots(RobotsKind.MISSING)[0]
    assert {f"http://{host}/", f"http://{host}/p/2"} <= {p.url for p in server.web.pages(host)}
    return host


def _config(server: SyntheticWebServer) -> Config:
    return load_config(None, {"fetch.proxy": server.proxy_url,
                              "politeness.delay_seconds": 0.05,
                              "fetch.total_timeout_seconds": 20})


def _harness(config: Config, out: Path, restore: Snapshot | None = None) -> KeyedHarness:
    # The clock starts at the wall clock's time: results carry wall-clock times too.
    harness = KeyedHarness(FetchFunction(FetchSettings.from_config(config), str(out)),
                           now_ms=int(time.time() * 1000), restore=restore)
    return harness.open()


@pytest.fixture
def harness(server: SyntheticWebServer, tmp_path: Path) -> Iterator[KeyedHarness]:
    harness = _harness(_config(server), tmp_path)
    yield harness
    harness.close()


def _batch(host: str, *paths: str) -> tuple[str, str]:
    """The crawl DB's message for ``host`` (keyed by host: no politeness groups here)."""
    return host, encode_batch([QueueEntry(f"http://{host}{path}", "L", f"http://{host}/")
                               for path in paths], ranked=False)


def _drive(harness: KeyedHarness, host: str) -> list:
    """Fire the timers until the host has none left, waiting for each fetch in flight before
    its poll (the fetch runs on the operator's background loop, in real time)."""
    emitted = []
    while (at := harness.next_timer()) is not None:
        future = harness.function._flights.get(host)
        if future is not None:
            concurrent.futures.wait([future], timeout=60)
        emitted += harness.advance_to(at)
    return emitted


def _row(harness: KeyedHarness, host: str) -> tuple:
    return tuple(harness.state("host-v2", host)["value"])


def test_a_batch_is_queued_and_the_host_woken_once(harness: KeyedHarness, host: str) -> None:
    assert harness.process(host, _batch(host, "/", "/p/1")) == []
    assert len(harness.state("queue", host)) == 2
    [wake] = harness.timers(host)
    assert _row(harness, host)[WAKE_MS] == wake
    harness.process(host, _batch(host, "/p/2"))
    assert harness.timers(host) == [wake]  # a wake-up is pending already
    assert len(harness.state("queue", host)) == 3


def test_robots_txt_first_then_every_url_once_and_the_not_found_probe_after_the_first(
    harness: KeyedHarness, host: str
) -> None:
    harness.process(host, _batch(host, "/", "/p/2"))
    results = _drive(harness, host)
    assert [(r.url, r.hops) for r in results] == [
        (f"http://{host}/robots.txt", PREREQUISITE),
        (f"http://{host}/", "L"),
        (probe_url(host), NOT_FOUND_PROBE),
        (f"http://{host}/p/2", "L"),
    ]
    assert results[2].http_status == 404
    assert [r.status for r in results[1::2]] == [Status.FETCHED, Status.FETCHED]
    assert [r.not_found for r in results] == ["", "", "", ""]
    assert harness.state("queue", host) == {}
    row = _row(harness, host)
    assert row[LEASE_KIND] == ""
    assert row[WAKE_MS] == 0
    assert harness.state("robots", host)["value"][1] in (403, 404, 410)
    assert harness.state("not-found", host) == {"value": ""}  # asked: no soft 404


def test_a_host_that_answers_any_path_sends_its_not_found_page_with_each_page(
    soft_server: SyntheticWebServer, tmp_path: Path
) -> None:
    web = soft_server.web
    host = next(h for h in web.host_names() if web.domains.plan(h).soft_404)
    harness = _harness(_config(soft_server), tmp_path)
    try:
        harness.process(host, _batch(host, "/", "/archive/notes-7.html", "/archive/x.html"))
        results = _drive(harness, host)
        stored = harness.state("not-found", host)["value"]
    finally:
        harness.close()
    first, probe, *pages = results[1:]
    assert (first.url, first.not_found) == (f"http://{host}/", "")  # before the probe
    assert (probe.url, probe.http_status, probe.hops) == (probe_url(host), 200, NOT_FOUND_PROBE)
    assert probe.not_found == stored
    assert NotFoundPrint.decode(stored).title == f"page not found - {host}"
    assert [(page.http_status, page.not_found) for page in pages] == [(200, stored)] * 2


def test_no_probe_when_it_is_turned_off(
    server: SyntheticWebServer, tmp_path: Path, host: str
) -> None:
    config = dataclasses.replace(_config(server), fetch=dataclasses.replace(
        _config(server).fetch, not_found_probe=False))
    harness = _harness(config, tmp_path)
    try:
        harness.process(host, _batch(host, "/", "/p/2"))
        results = _drive(harness, host)
    finally:
        harness.close()
    assert [r.url for r in results] == [
        f"http://{host}/robots.txt", f"http://{host}/", f"http://{host}/p/2"]


def test_a_stale_timer_changes_nothing(harness: KeyedHarness, host: str) -> None:
    harness.process(host, _batch(host, "/"))
    [wake] = harness.timers(host)
    with harness.keyed(host):  # a timer of an earlier registration, superseded since
        harness.timer_service.register_processing_time_timer(wake - 1)
    before = (harness.state("host-v2", host), harness.state("queue", host))
    assert harness.advance_to(wake - 1) == []
    assert (harness.state("host-v2", host), harness.state("queue", host)) == before
    assert harness.timers(host) == [wake]


def test_a_fetch_lost_with_its_attempt_is_made_again_after_a_restore(
    server: SyntheticWebServer, tmp_path: Path, host: str
) -> None:
    config = _config(server)
    first = _harness(config, tmp_path)
    first.process(host, _batch(host, "/"))
    assert first.advance_to(first.next_timer()) == []  # robots.txt starts
    assert _row(first, host)[LEASE_KIND] == LEASE_ROBOTS
    snapshot = first.snapshot()  # the checkpoint holds the lease and the poll's timer
    first.close()
    second = _harness(config, tmp_path, restore=snapshot)
    try:
        results = _drive(second, host)
    finally:
        second.close()
    assert [r.url for r in results] == [f"http://{host}/robots.txt", f"http://{host}/"]


def test_timers_while_the_job_drains_wait_for_the_resumed_job(
    server: SyntheticWebServer, tmp_path: Path, host: str
) -> None:
    config = _config(server)
    draining = _harness(config, tmp_path)
    draining.process(host, _batch(host, "/"))
    [wake] = draining.timers(host)
    draining.close()  # the end of the input, as a stop with a savepoint drains the job
    assert draining.advance_to(wake) == []
    [later] = draining.timers(host)
    assert later == wake + 1000
    assert _row(draining, host)[WAKE_MS] == later
    assert len(draining.state("queue", host)) == 1  # nothing started
    resumed = _harness(config, tmp_path, restore=draining.snapshot())
    try:
        results = _drive(resumed, host)
    finally:
        resumed.close()
    assert [r.url for r in results] == [f"http://{host}/robots.txt", f"http://{host}/"]


def test_a_version_1_host_row_is_read_once_and_moved(
    server: SyntheticWebServer, tmp_path: Path, host: str
) -> None:
    config = _config(server)
    before = _harness(config, tmp_path)
    before.process(host, _batch(host, "/"))
    snapshot = before.snapshot()
    before.close()
    # As a checkpoint taken before version 2 holds it: in ``host``, without the failures.
    row = tuple(snapshot.tables["host-v2"].pop(host)["value"])
    snapshot.tables["host"][host] = {"value": Row(1, *row[1:-1])}
    after = _harness(config, tmp_path, restore=snapshot)
    try:
        after.process(host, _batch(host, "/p/1"))
        assert after.keys("host") == set()
        upgraded = _row(after, host)
    finally:
        after.close()
    assert upgraded[0] == 2
    assert upgraded[-1] == 0
    tail = HOST_ROW_FIELDS.index("tail")
    assert upgraded[:tail] + upgraded[tail + 1:-1] == row[:tail] + row[tail + 1:-1]
    assert upgraded[tail] == row[tail] + 1  # the second batch's URL


def test_the_state_layout_is_the_one_savepoints_hold(harness: KeyedHarness) -> None:
    assert harness.descriptors == {
        "queue": ("map", "MapTypeInfo<Long, String>"),
        "host-v2": ("value", "RowTypeInfo(version: Integer, head: Long, tail: Long, "
                             "next_allowed_ms: Long, last_duration_ms: Long, lease_kind: String, "
                             "lease_payload: String, lease_started_ms: Long, wake_ms: Long, "
                             "robots_fetched_ms: Long, failures: Integer)"),
        "host": ("value", "RowTypeInfo(version: Integer, head: Long, tail: Long, "
                          "next_allowed_ms: Long, last_duration_ms: Long, lease_kind: String, "
                          "lease_payload: String, lease_started_ms: Long, wake_ms: Long, "
                          "robots_fetched_ms: Long)"),
        "robots": ("value", "RowTypeInfo(version: Integer, http_status: Integer, body: String, "
                            "fetched_ms: Long, expires_ms: Long, reason: String)"),
        "not-found": ("value", "String"),
    }
