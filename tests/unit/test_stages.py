"""The stages' names and their figures' names (``crawl/stages.py``) keep the spellings that
savepoints, status files, metrics and the Grafana dashboard already hold: written out here
letter for letter, so that a constant changed by mistake fails."""

from __future__ import annotations

import re

import pytest

from crawl import stages
from crawl.stages import (
    CRAWL_DB,
    CRAWLDB_DEFERRED,
    CRAWLDB_URLS_RELEASED_REVISITS,
    FETCH,
    FETCH_RESULTS,
    LOOP_LISTER,
    LOOP_READER,
    LOOP_SINK,
    NEAR_DUPLICATES,
    NEARDUP_INDEX,
    PROCESS,
    PROCESS_LINKS_REJECTED,
    RETIRED_UIDS,
    STAGES,
    Figure,
    Stage,
)

FIGURES = {name: value for name, value in vars(stages).items() if isinstance(value, Figure)}


def test_every_stage_keeps_its_uid_and_figures_name() -> None:
    """Operator uids map a savepoint's state to operators; figures names are in status file
    names, metric names and the dashboard's queries."""
    assert [(stage.uid, stage.figures) for stage in STAGES] == [
        ("loop-lister", None),
        ("loop-reader", "decode"),
        ("crawl-db", "crawldb"),
        ("fetch", "fetch"),
        ("process", "process"),
        ("neardup-index", "nearindex"),
        ("neardup-verdicts", "neardup"),
        ("loop-sink", None),
    ]
    assert STAGES == (LOOP_LISTER, LOOP_READER, CRAWL_DB, FETCH, PROCESS, NEARDUP_INDEX,
                      NEAR_DUPLICATES, LOOP_SINK)
    # A retired uid is no stage's: a savepoint's state under it is left behind on restore.
    assert RETIRED_UIDS == ("near-duplicates",)
    assert not set(RETIRED_UIDS) & {stage.uid for stage in STAGES}
    assert len({stage.uid for stage in STAGES}) == len(STAGES)
    assert not [value for value in vars(stages).values()
                if isinstance(value, Stage) and value not in STAGES]


#: Every figure constant and its key, as the crawls so far spell it.
SPELLINGS = {
    "DECODE_LINES": "decode.lines",
    "CRAWLDB_KNOWN": "crawldb.known",
    "CRAWLDB_BUFFERED": "crawldb.buffered",
    "CRAWLDB_PENDING": "crawldb.pending",
    "CRAWLDB_BELOW_CUTOFF": "crawldb.below_cutoff",
    "CRAWLDB_ARCHIVED": "crawldb.archived",
    "CRAWLDB_DEFERRED": "crawldb.deferred",
    "CRAWLDB_URLS": "crawldb.urls",
    "CRAWLDB_URLS_FOUND": "crawldb.urls.found",
    "CRAWLDB_URLS_NEW": "crawldb.urls.new",
    "CRAWLDB_URLS_DUPLICATE": "crawldb.urls.duplicate",
    "CRAWLDB_URLS_RELEASED": "crawldb.urls.released",
    "CRAWLDB_URLS_RELEASED_REVISITS": "crawldb.urls.released.revisits",
    "CRAWLDB_URLS_NEAR_DUPLICATE": "crawldb.urls.near_duplicate",
    "CRAWLDB_MERGES": "crawldb.merges",
    "CRAWLDB_RELEASES": "crawldb.releases",
    "CRAWLDB_RELEASES_FROM_WINDOW": "crawldb.releases.from_window",
    "FETCH_QUEUED": "fetch.queued",
    "FETCH_URLS_IN": "fetch.urls.in",
    "FETCH_IN_FLIGHT": "fetch.in_flight",
    "FETCH_HOSTS_ACTIVE": "fetch.hosts_active",
    "FETCH_HOSTS_FAILING": "fetch.hosts_failing",
    "FETCH_TIMERS": "fetch.timers",
    "FETCH_RESULTS": "fetch.results",
    "FETCH_ERRORS": "fetch.errors",
    "FETCH_RETRIES": "fetch.retries",
    "FETCH_RETRIES_EXHAUSTED": "fetch.retries.exhausted",
    "FETCH_BACKOFFS": "fetch.backoffs",
    "FETCH_SUSPENSIONS": "fetch.suspensions",
    "FETCH_ROBOTS_RETRIES": "fetch.robots.retries",
    "FETCH_ROBOTS_UNPARSEABLE": "fetch.robots.unparseable",
    "FETCH_HELD_DOMAIN_QUOTA": "fetch.held.domain_quota",
    "FETCH_LATENCY_MS": "fetch.latency_ms",
    "PROCESS_PAGES": "process.pages",
    "PROCESS_BYTES": "process.bytes",
    "PROCESS_FOUND_BY": "process.found_by",
    "PROCESS_FETCHES_REFRESH": "process.fetches.refresh",
    "PROCESS_FETCHES_DISCOVERY": "process.fetches.discovery",
    "PROCESS_WARC_REVISITS": "process.warc.revisits",
    "PROCESS_WARC_NOT_MODIFIED": "process.warc.not_modified",
    "PROCESS_LINKS_FOUND": "process.links.found",
    "PROCESS_LINKS_RECENT": "process.links.recent",
    "PROCESS_LINKS_HELD_CASH": "process.links.held_cash",
    "PROCESS_LINKS_REJECTED": "process.links.rejected",
    "PROCESS_NEARDUP_QUERIES": "process.neardup.queries",
    "PROCESS_NOT_FOUND_PROBES": "process.not_found_probes",
    "PROCESS_PAGES_SOFT_404": "process.pages.soft_not_found",
    "PROCESS_LINKS_SOFT_404": "process.links.soft_not_found",
    "NEARDUP_INDEX_PROBES": "nearindex.probes",
    "NEARDUP_INDEX_ADDED": "nearindex.pages.added",
    "NEARDUP_INDEX_HELD_AGAIN": "nearindex.pages.held_again",
    "NEARDUP_INDEX_FORGOTTEN": "nearindex.pages.forgotten",
    "NEARDUP_INDEX_FOUND": "nearindex.found",
    "NEARDUP_INDEX_LATE": "nearindex.late_answers",
    "NEARDUP_PAGES_IN": "neardup.pages.in",
    "NEARDUP_PAGES_NEAR_DUPLICATE": "neardup.pages.near_duplicate",
}


@pytest.mark.parametrize(("constant", "key"), SPELLINGS.items())
def test_every_figure_keeps_its_name(constant: str, key: str) -> None:
    assert FIGURES[constant].key == key


def test_the_spelling_table_covers_every_figure() -> None:
    assert set(SPELLINGS) == set(FIGURES)


def test_figures_belong_to_stages_with_figures_and_are_named_once() -> None:
    for name, figure in FIGURES.items():
        assert figure.stage in STAGES, name
        assert figure.stage.figures is not None, name
        assert re.fullmatch(r"[a-z_]+(\.[a-z_]+)*", figure.name), name
    assert len({figure.key for figure in FIGURES.values()}) == len(FIGURES)


def test_a_family_names_its_members() -> None:
    assert FETCH_RESULTS.member("FETCHED") == "results.FETCHED"
    assert FETCH_RESULTS.member_key("FETCHED") == "fetch.results.FETCHED"
    assert PROCESS_LINKS_REJECTED.member("url:scheme:data") == "links.rejected.url:scheme:data"
    assert CRAWLDB_DEFERRED.member_prefix == "crawldb.deferred."
    assert CRAWLDB_URLS_RELEASED_REVISITS.name == "urls.released.revisits"
