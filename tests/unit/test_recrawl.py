"""The recrawl schedule: intervals that follow change, validators, failures and retirement."""

from __future__ import annotations

import numpy as np
import pytest

from crawl.archive.warc import sha1_digest
from crawl.config import ConfigError, RecrawlSection, load_config, parse_recrawl_overrides
from crawl.crawldb.recrawl import (
    Observation,
    RecrawlSchedule,
    RecrawlState,
    Revisit,
    conditional_headers,
    digest64,
    parse_etag,
    parse_last_modified,
    parse_lastmod,
    states_of_records,
    store_states,
)
from crawl.http.dates import format_http_date
from drum import NEVER, neutral

SECTION = RecrawlSection(
    enabled=True, initial_seconds=100.0, min_seconds=5.0, max_seconds=10_000.0,
    retry_seconds=60.0,
)
URL = "http://a.test/p"
T0 = 1_700_000_000_000


def visit(schedule: RecrawlSchedule, state: RecrawlState | None, at_ms: int,
          seen: Observation | None, status: str = "FETCHED", http: int = 200,
          reason: str = "") -> tuple[RecrawlState, int, str]:
    return schedule.after(URL, status, http, reason, at_ms, Revisit(state, seen))


def test_first_fetch_gets_the_initial_interval_and_stores_validators() -> None:
    schedule = RecrawlSchedule(SECTION)
    seen = Observation(42, '"v1"', "Tue, 14 Nov 2023 22:13:20 GMT")
    state, next_ms, what = visit(schedule, None, T0, seen)
    assert what == "first"
    assert next_ms == T0 + 100_000
    assert (state.interval_s, state.digest, state.etag, state.weak) == (100, 42, "v1", False)
    assert state.modified_s == 1_700_000_000
    assert state.observed_s == state.captured_s == state.recrawl_s == T0 // 1000
    assert (state.visits, state.changes, state.failures_in_row) == (0, 0, 0)
    assert state.conditional_headers() == [
        ("If-None-Match", '"v1"'), ("If-Modified-Since", "Tue, 14 Nov 2023 22:13:20 GMT")
    ]


def test_nutch_rule_then_cho_estimate_shrink_for_change_and_grow_for_none() -> None:
    schedule = RecrawlSchedule(SECTION)
    state, at, _ = visit(schedule, None, T0, Observation(1))
    intervals = []
    for version in range(2, 12):  # a page that changes at every visit
        state, at, what = visit(schedule, state, at, Observation(version))
        assert what == "changed"
        intervals.append(state.interval_s)
    assert intervals[:3] == [80, 64, 51]  # x (1 - dec_rate) for the first visits
    assert intervals[-1] == 5  # down to min_seconds
    assert all(b <= a for a, b in zip(intervals, intervals[1:], strict=False))
    quiet = state
    for _ in range(50):  # then it stops changing
        quiet, at, what = visit(schedule, quiet, at, Observation(11))
        assert what == "unchanged"
    assert quiet.interval_s == 10_000  # up to max_seconds, at most x 1.4 a visit
    assert quiet.visits <= SECTION.estimate_window


def test_with_change_distance_small_changes_of_the_main_text_are_not_changes() -> None:
    """Simhash observations: a change is more than ``change_distance`` bits from the version
    of the last counted change, so small edits add up; digests and simhashes never compare."""
    schedule = RecrawlSchedule(RecrawlSection(
        enabled=True, initial_seconds=100.0, min_seconds=5.0, max_seconds=10_000.0,
        change_distance=3,
    ))
    base = 0xF0F0_0000_0000_0000
    state, at, _ = visit(schedule, None, T0, Observation(base, simhash=True))
    assert (state.digest, state.simhash) == (base, True)
    for bits, expected in ((0b1, "unchanged"), (0b11, "unchanged"), (0b111, "unchanged"),
                           (0b1111, "changed"), (0b1111, "unchanged")):
        state, at, what = visit(schedule, state, at, Observation(base ^ bits, simhash=True))
        assert what == expected, bits
    assert state.digest == base ^ 0b1111  # the version of the last change is kept
    assert (state.visits, state.changes) == (5, 1)
    # A page that falls back to its digest (too few words now) has changed.
    state, at, what = visit(schedule, state, at, Observation(base ^ 0b1111))
    assert what == "changed"
    assert not state.simhash
    # With change_distance 0 (the default) every other digest is a change.
    plain = RecrawlSchedule(SECTION)
    first, at, _ = visit(plain, None, T0, Observation(base, simhash=True))
    assert visit(plain, first, at, Observation(base ^ 1, simhash=True))[2] == "changed"
    assert visit(plain, first, at, Observation(base, simhash=True))[2] == "unchanged"


def test_the_estimate_settles_where_half_the_visits_find_a_change() -> None:
    """A page that changes every 60 s, visited at the interval the schedule picks: the interval
    settles near the one at which a visit finds a change half the time (Poisson: 60 ln 2)."""
    schedule = RecrawlSchedule(RecrawlSection(enabled=True, initial_seconds=400.0,
                                              min_seconds=1.0, max_seconds=10_000.0))
    rng = np.random.default_rng(7)
    changes = np.cumsum(rng.exponential(60.0, 20_000))  # Poisson changes, mean 60 s
    t = 0.0
    state, _, _ = schedule.after(URL, "FETCHED", 200, "", T0, Revisit(None, Observation(1)))
    late = []
    for visit_no in range(600):
        t += state.interval_s
        version = int(np.searchsorted(changes, t))
        state, _, _ = schedule.after(URL, "FETCHED", 200, "", T0 + int(t * 1000),
                                     Revisit(state, Observation(version + 1)))
        if visit_no > 300:
            late.append(state.interval_s)
    assert 20 <= np.median(late) <= 90


def test_a_304_is_unchanged_keeps_the_capture_and_may_update_validators() -> None:
    schedule = RecrawlSchedule(SECTION)
    state, at, _ = visit(schedule, None, T0, Observation(7, 'W/"a"', None))
    assert state.etag_header() == 'W/"a"'
    again, next_ms, what = visit(schedule, state, at, Observation(not_modified=True))
    assert what == "not-modified"
    assert (again.digest, again.captured_s, again.etag_header()) == (7, state.captured_s,
                                                                      'W/"a"')
    assert again.observed_s == at // 1000
    assert again.visits == 1
    assert again.changes == 0
    assert next_ms == at + again.interval_s * 1000
    assert again.interval_s == 140
    newer, _, _ = visit(schedule, again, next_ms, Observation(not_modified=True, etag='"b"'))
    assert newer.etag_header() == '"b"'


def test_a_new_capture_without_validators_drops_the_old_ones() -> None:
    schedule = RecrawlSchedule(SECTION)
    state, at, _ = visit(schedule, None, T0, Observation(7, '"a"', format_http_date(1000)))
    later, _, _ = visit(schedule, state, at, Observation(8))
    assert (later.etag, later.modified_s) == ("", 0)
    assert later.conditional_headers() == []


def test_failures_back_off_then_retire_and_keep_what_was_known() -> None:
    schedule = RecrawlSchedule(RecrawlSection(enabled=True, retry_seconds=60.0,
                                              retire_failures=4, gone_failures=2))
    state, at, _ = visit(schedule, None, T0, Observation(5, '"x"', None))
    waits = []
    for _ in range(3):
        state, next_ms, what = visit(schedule, state, at, None, "FETCH_ERROR", 0,
                                     "timeout:read")
        assert what == "retry"
        waits.append(next_ms - at)
        at = next_ms
    assert waits == [60_000, 120_000, 240_000]
    assert (state.digest, state.etag, state.failures_in_row) == (5, "x", 3)
    state, next_ms, what = visit(schedule, state, at, None, "FETCH_ERROR", 0, "timeout:read")
    assert (what, next_ms) == ("retired", NEVER)
    # A success in between starts the count again.
    recovered, at2, _ = visit(schedule, RecrawlState(recrawl_s=1, interval_s=100, observed_s=1,
                                                    failures_in_row=3), at, Observation(5))
    assert recovered.failures_in_row == 0


@pytest.mark.parametrize(("http", "reason"), [(404, "http:404"), (410, "http:410"),
                                              (0, "dns:unresolved")])
def test_gone_urls_retire_sooner(http: int, reason: str) -> None:
    schedule = RecrawlSchedule(RecrawlSection(enabled=True, gone_failures=2))
    status = "HTTP_ERROR" if http else "FETCH_ERROR"
    state, next_ms, what = visit(schedule, None, T0, None, status, http, reason)
    assert what == "retry"
    assert next_ms < NEVER
    _, next_ms, what = visit(schedule, state, next_ms, None, status, http, reason)
    assert (what, next_ms) == ("retired", NEVER)


def test_denied_and_rejected() -> None:
    schedule = RecrawlSchedule(RecrawlSection(enabled=True, denied_seconds=3600.0))
    assert visit(schedule, None, T0, None, "ROBOTS_DENIED", 0, "robots:disallow")[1:] == (
        T0 + 3_600_000, "denied")
    assert visit(schedule, None, T0, None, "REJECTED", 0, "scope")[1:] == (NEVER, "never")


def test_overrides_bound_hosts_and_patterns() -> None:
    schedule = RecrawlSchedule(RecrawlSection(
        enabled=True, min_seconds=100.0, overrides=(
            ".news.test min=10 initial=20", "re:/feed$ max=200", "a.test max=50",
        )))
    assert schedule.bounds("http://www.news.test/x") == (10.0, 2_592_000.0, 20.0)
    assert schedule.bounds("http://news.test/x") == (10.0, 2_592_000.0, 20.0)
    assert schedule.bounds("http://b.test/feed") == (100.0, 200.0, 200.0)
    assert schedule.bounds("http://a.test:8080/") == (100.0, 100.0, 100.0)
    assert schedule.bounds("http://c.test/") == (100.0, 2_592_000.0, 86_400.0)
    with pytest.raises(ValueError, match="unknown key"):
        parse_recrawl_overrides(["a.test every=3"])
    with pytest.raises(ValueError, match="regular expression"):
        parse_recrawl_overrides(["re:( min=3"])
    with pytest.raises(ConfigError, match="recrawl.overrides"):
        load_config(overrides={"recrawl.overrides": "a.test"})


def test_config_is_checked() -> None:
    with pytest.raises(ConfigError, match="needs priority.enabled"):
        load_config(overrides={"recrawl.enabled": "true", "priority.enabled": "false"})
    with pytest.raises(ConfigError, match="min_seconds"):
        load_config(overrides={"recrawl.min_seconds": "100", "recrawl.max_seconds": "10"})
    with pytest.raises(ConfigError, match="change_distance"):
        load_config(overrides={"recrawl.change_distance": "40"})
    assert load_config(overrides={"recrawl.enabled": "true"}).recrawl.enabled


def test_validator_parsing() -> None:
    assert parse_etag('"abc"') == ("abc", False)
    assert parse_etag(' W/"x-1" ') == ("x-1", True)
    assert parse_etag('""') == ("", False)
    assert parse_etag("abc") is None  # unquoted: not an entity tag
    # Longer than 32: kept when mostly hex digits (packed), else not.
    sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert parse_etag(f'"{sha256}"') == (sha256, False)
    assert parse_etag('W/"' + "a" * 33 + '"') == ("a" * 33, True)
    assert parse_etag('"' + "z" * 33 + '"') is None
    assert parse_etag('"a"b"') is None
    digest = sha1_digest(b"page")
    assert digest64(digest) == digest64(digest) != digest64(sha1_digest(b"other")) != 0
    assert digest64("md5:zz") == 0
    assert digest64("sha1:not base32!") == 0


#: 2026-11-22 04:53:05 UTC
NOW_S = 1_795_323_185


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777),
        # every form of RFC 9110, the obsolete ones too
        ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777),
        ("Sun Nov  6 08:49:37 1994", 784_111_777),
        # lenient, unlike Retry-After's: forms servers send besides RFC 9110's
        ("Sun, 06 Nov 1994 08:49:37 +0000", 784_111_777),
        ("sun, 06 nov 1994 08:49:37 GMT", 784_111_777),
        ("Sun, 06 Nov 1994 09:49:37 +0100", 784_111_777),
        # an invalid date is ignored (RFC 9110 8.8.2)
        ("yesterday", 0),
        ("Sun, 06 Nov 1994 08:49:37", 0),  # no zone: no moment
        ("Fri, 30 Feb 2024 00:00:00 GMT", 0),
        ("", 0),
        (None, 0),
        # dates the crawl DB's record cannot hold
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
        ("Wed, 31 Dec 1969 23:59:59 GMT", 0),
        ("Sun, 07 Feb 2106 06:28:15 GMT", 2**32 - 1),
        ("Sun, 07 Feb 2106 06:28:16 GMT", 0),
    ],
)
def test_last_modified_parsing(value: str | None, seconds: int) -> None:
    assert parse_last_modified(value, NOW_S) == seconds


def test_a_two_digit_last_modified_year_is_placed_from_now() -> None:
    # RFC 9110: an RFC 850 year more than 50 years ahead is in the past century.
    assert parse_last_modified("Thursday, 01-Jan-26 00:00:00 GMT", NOW_S) == 1_767_225_600
    assert parse_last_modified("Friday, 01-Jan-77 00:00:00 GMT", NOW_S) == 220_924_800
    in_2076, in_1976 = 3_345_062_400, 189_302_400
    assert parse_last_modified("Wednesday, 01-Jan-76 00:00:00 GMT", NOW_S) == in_2076
    assert parse_last_modified("Wednesday, 01-Jan-76 00:00:00 GMT", 1_000_000_000) == in_1976


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2023-11-14T22:13:20Z", 1_700_000_000),
        ("2023-11-14T23:13:20+01:00", 1_700_000_000),
        ("2023-11-14T22:13:20.250+00:00", 1_700_000_000),
        # W3C Datetime forms Python 3.10's fromisoformat does not read by itself:
        ("2023-11-14T22:13Z", 1_699_999_980),
        ("2023-11-14T22:13:20.5Z", 1_700_000_000),
        ("2023-11-14T22:13:20.123456789Z", 1_700_000_000),
        ("2023-11-14T23:13:20+0100", 1_700_000_000),
        ("2023-11-14 22:13:20Z", 1_700_000_000),
        ("2023-11-14T22:13:20", 1_700_000_000),  # no time zone: UTC
        ("2023-11-14", 1_699_920_000),
        ("2023-11", 1_698_796_800),
        ("2023", 1_672_531_200),
        ("Tue, 14 Nov 2023 22:13:20 GMT", 1_700_000_000),  # an RSS pubDate
        (" 2023-11-14 ", 1_699_920_000),
        ("2023-11-15", 0),  # after now: says nothing true
        ("yesterday", 0),
        ("2023-13-01", 0),
        ("", 0),
        (None, 0),
    ],
)
def test_sitemap_lastmod_parsing(text: str | None, seconds: int) -> None:
    assert parse_lastmod(text, now_s=1_700_000_000) == seconds


def test_states_travel_through_json_and_records() -> None:
    states = [
        RecrawlState(1_700_000_000, 60, (1 << 64) - 1, 5, 6, 7, 3, 1, 2, "t" * 32, True, True),
        RecrawlState(interval_s=3600),
        RecrawlState(1, 2, 3, etag="", weak=False),
        # Long tags as servers send them: a SHA-256; S3's multipart and Netlify's forms.
        RecrawlState(1, 2, 3, etag="E3B0C44298FC1C149AFBF4C8996FB924"
                                   "27AE41E4649B934CA495991B7852B855"),
        RecrawlState(1, 2, 3, etag="d41d8cd98f00b204e9800998ecf8427e-17", weak=True),
        RecrawlState(1, 2, 3, etag="0041d8cd98f00b204e9800998ecf8400-ssl-df", simhash=True),
        RecrawlState(1, 2, 3, etag="00" * 31),  # packed bytes ending in NUL
    ]
    for state in states:
        assert RecrawlState.decode(state.encode()) == state
    records = neutral(len(states))
    store_states(records, states)
    assert states_of_records(records) == states
    assert states_of_records(neutral(1)) == [None]
    revisit = Revisit(states[0], Observation(9, '"e"', "x", True, False))
    assert Revisit.decode(revisit.encode()) == revisit
    assert Revisit.decode({}) == Revisit(None, None)
    for bad in ([1, 2], "x", [-1] * 9 + ["", 0]):
        with pytest.raises((ValueError, TypeError)):
            RecrawlState.decode(bad)
    assert conditional_headers(["garbage"]) == []
    assert conditional_headers(None) == []
    assert conditional_headers(states[0].encode()) == [
        ("If-None-Match", 'W/"' + "t" * 32 + '"'),
        ("If-Modified-Since", format_http_date(5)),
    ]
