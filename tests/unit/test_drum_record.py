"""The DRUM record: stable keys, and the vectorised merge rule equals the one-by-one rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drum import (
    NEVER,
    RECORD,
    DrumStatus,
    ReasonTable,
    announced,
    combine,
    combine_groups,
    combine_one,
    discoveries,
    host_key,
    neutral,
    outcomes,
    record_dict,
    url_key,
    url_keys,
)
from drum.record import ETAG_LENGTH_MASK, pack_etag, unpack_etag


def test_url_key_is_stable_blake2b() -> None:
    # Golden values: a change here changes the identity of every URL of a crawl.
    assert url_key("http://example.com/") == 0x6ad9d0c164122fb
    assert url_key("http://example.com/") == url_key(b"http://example.com/")
    assert url_keys(["http://example.com/", "http://a/"]).tolist() == [
        url_key("http://example.com/"), url_key("http://a/")
    ]
    assert url_key("http://example.com/") == int.from_bytes(
        __import__("hashlib").blake2b(b"http://example.com/", digest_size=8).digest(), "little"
    )
    assert 0 < host_key("example.com") < 1 << 32


def test_reason_table() -> None:
    table = ReasonTable()
    assert table.code("") == 0
    assert table.code("http:404") == 1 == table.code("http:404")
    assert table.name(1) == "http:404"
    with pytest.raises(ValueError, match="empty reason"):
        ReasonTable(["x"])


def test_outcomes_count_attempts_and_failures() -> None:
    r = outcomes(3, status=[DrumStatus.FETCHED, DrumStatus.FETCH_ERROR,
                            DrumStatus.ROBOTS_DENIED], at_ms=5)
    assert r["fetch_count"].tolist() == [1, 1, 0]
    assert r["failure_count"].tolist() == [0, 1, 0]
    assert r["next_fetch_ms"].tolist() == [NEVER] * 3


def test_flink_crawler_rules() -> None:
    a = discoveries(1, now_ms=10, score=1.0, next_fetch_ms=50)
    b = discoveries(1, now_ms=20, score=2.0, next_fetch_ms=30)
    m = record_dict(combine(a, b)[0])
    assert (m["score"], m["next_fetch_ms"], m["status_ms"], m["discovered_ms"]) == (3.0, 30, 20,
                                                                                   10)
    fetched = outcomes(1, status=DrumStatus.FETCHED, at_ms=40, next_fetch_ms=1000)
    m = record_dict(combine(combine(a, fetched), b)[0])
    assert (m["status"], m["next_fetch_ms"]) == (DrumStatus.FETCHED, 1000)
    late = outcomes(1, status=DrumStatus.HTTP_ERROR, at_ms=35, http_status=500)
    m = record_dict(combine(combine(a, fetched), late)[0])
    assert (m["status"], m["fetch_count"], m["failure_count"]) == (DrumStatus.FETCHED, 2, 1)
    assert record_dict(combine(a, neutral(1))[0]) == record_dict(a[0])


def test_a_queued_mark_never_hides_the_recrawl_fields() -> None:
    fetched = outcomes(1, status=DrumStatus.FETCHED, at_ms=40_000, next_fetch_ms=99_000)
    fetched["recrawl_s"], fetched["interval_s"], fetched["digest"] = 40, 59, 1234
    fetched["etag"], fetched["etag_info"] = b"abc", 3
    queued = neutral(1)
    queued["status"], queued["status_ms"] = DrumStatus.QUEUED, 50_000
    hint = discoveries(1, now_ms=45_000, interval_s=3600)
    for merged in (combine(combine(fetched, queued), hint), combine(fetched, combine(queued,
                                                                                      hint))):
        m = record_dict(merged[0])
        assert m["status"] == DrumStatus.QUEUED
        assert (m["recrawl_s"], m["interval_s"], m["digest"], m["etag"]) == (40, 59, 1234,
                                                                            b"abc")
    # Without a fetch outcome, the least interval hint of the discoveries.
    m = record_dict(combine(discoveries(1, now_ms=1, interval_s=600), hint)[0])
    assert (m["recrawl_s"], m["interval_s"]) == (0, 600)


def test_a_sitemaps_announcement_makes_a_url_due_until_its_next_fetch() -> None:
    fetched = outcomes(1, status=DrumStatus.FETCHED, at_ms=40_000, next_fetch_ms=999_000)
    fetched["recrawl_s"] = 40
    older = discoveries(1, now_ms=41_000, announced_s=30)  # a change before the fetch
    newer = discoveries(1, now_ms=42_000, announced_s=45)
    assert not announced(combine(fetched, older)).any()
    # The latest announcement is kept whatever the order the records are folded in.
    for merged in (combine(combine(fetched, newer), older), combine(fetched, combine(older,
                                                                                      newer))):
        assert record_dict(merged[0])["announced_s"] == 45
        assert announced(merged).all()
    # The next outcome is newer than the announcement: due by its schedule again.
    refetched = outcomes(1, status=DrumStatus.FETCHED, at_ms=50_000, next_fetch_ms=999_000)
    refetched["recrawl_s"] = 50
    assert not announced(combine(combine(fetched, newer), refetched)).any()
    # Not a URL never fetched (due anyway), handed out (QUEUED) or retired (never again).
    assert not announced(newer).any()
    queued = neutral(1)
    queued["status"], queued["status_ms"] = DrumStatus.QUEUED, 43_000
    assert not announced(combine(combine(fetched, newer), queued)).any()
    retired = outcomes(1, status=DrumStatus.HTTP_ERROR, at_ms=40_000, http_status=404)
    retired["recrawl_s"] = 40
    assert not announced(combine(retired, newer)).any()


def _record(draw) -> dict:
    kind = draw(st.sampled_from(["none", "disc", "out"]))
    if kind == "none":
        r = neutral(1)
        r["leased_until_ms"] = draw(st.integers(0, 100))
    elif kind == "disc":
        r = discoveries(1, now_ms=draw(st.integers(1, 100)), score=draw(st.integers(0, 8)) / 4,
                        depth=draw(st.integers(0, 9)), host=draw(st.sampled_from([0, 7])),
                        next_fetch_ms=draw(st.integers(1, 200)))
    else:
        r = outcomes(1, status=draw(st.sampled_from(list(DrumStatus)[2:])),
                     at_ms=draw(st.integers(1, 100)), http_status=draw(st.integers(0, 599)),
                     reason=draw(st.integers(0, 3)),
                     next_fetch_ms=draw(st.sampled_from([NEVER, 150])),
                     host=draw(st.sampled_from([0, 7])))
    r["flags"] = draw(st.integers(0, 3))
    if kind == "disc":
        r["interval_s"] = draw(st.sampled_from([0, 0, 60, 3600]))
        r["announced_s"] = draw(st.sampled_from([0, 0, 5, 20]))
    elif kind == "out" and draw(st.booleans()):
        # The recrawl fields of a fetch outcome (the QUEUED mark has none).
        r["recrawl_s"] = draw(st.integers(1, 9))
        r["interval_s"] = draw(st.integers(1, 999))
        r["digest"] = draw(st.integers(0, (1 << 64) - 1))
        r["visits"] = draw(st.integers(0, 255))
        r["etag"] = draw(st.binary(max_size=32)).rstrip(b"\0")
        r["etag_info"] = len(r["etag"][0])
    if draw(st.booleans()):
        r["payload_pos"] = draw(st.integers(0, 1 << 40))
        r["payload_len"] = draw(st.integers(1, 99))
    return record_dict(r[0])


@st.composite
def groups(draw) -> list[list[dict]]:
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=8))
    return [[_record(draw) for _ in range(size)] for size in sizes]


def _array(records: list[dict]) -> np.ndarray:
    out = np.zeros(len(records), dtype=RECORD)
    for i, r in enumerate(records):
        for k, v in r.items():
            out[i][k] = v
    return out


@settings(max_examples=150, deadline=None)
@given(groups())
def test_vectorised_rule_equals_sequential_rule(data: list[list[dict]]) -> None:
    flat = [r for g in data for r in g]
    starts = np.cumsum([0] + [len(g) for g in data[:-1]])
    got = combine_groups(_array(flat), starts)
    for i, group in enumerate(data):
        expected = group[0]
        for r in group[1:]:
            expected = combine_one(expected, r)
        assert record_dict(got[i]) == expected
    # associativity: folding the two halves first gives the same record
    for i, group in enumerate(data):
        if len(group) >= 3:
            left = combine_groups(_array(group[:2]), np.array([0]))
            right = combine_groups(_array(group[2:]), np.array([0]))
            assert record_dict(combine(left, right)[0]) == record_dict(got[i])


def test_long_etags_pack_into_the_record_and_back() -> None:
    rng = np.random.default_rng(5)
    tags = ["", "a", "x" * 32, "0" * 64, "F" * 64, "00" * 31, "ab" * 16 + "-1"]
    too_long = []
    for length in range(33, 80):
        digits = "".join(rng.choice(list("0123456789abcdef"), length))
        tags += [digits[:32] + "-ssl-df", digits[:40] + "-" + "q" * 8]
        # All hex digits: 62 of them fit (31 bytes and their count), or exactly 64 (32 bytes).
        (tags if length <= 62 or length == 64 else too_long).extend([digits, digits.upper()])
    for tag in tags:
        data, code = pack_etag(tag)
        assert code <= ETAG_LENGTH_MASK
        records = neutral(1)
        records["etag"] = [data]  # (NumPy drops trailing NUL bytes, as in a file read back)
        assert unpack_etag(records["etag"][0], code) == tag
    for tag in [*too_long, "z" * 33, "0" * 62 + "zzz"]:
        assert pack_etag(tag) is None
