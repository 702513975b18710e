"""The near-duplicate detector: its verdicts, its bounds, its restore, and its precision and
recall on the synthetic web's near-duplicate profile."""

from __future__ import annotations

import random

import lxml.html
import pytest

from crawl.neardup import (
    MIN_FEATURES,
    Fingerprint,
    NearDuplicateDetector,
    Verdict,
    content_features,
    fingerprint,
    fingerprint_text,
)
from synthweb import SyntheticWeb, WebConfig

BIG = Fingerprint(0, MIN_FEATURES)


def _fp(value: int) -> Fingerprint:
    return Fingerprint(value, MIN_FEATURES)


def test_features_are_distinct_words_without_digits() -> None:
    assert content_features("The cat, the DOG; 2026 x1 the end") == ["the", "cat", "dog", "end"]
    assert fingerprint_text("") == Fingerprint(0, 0)


def test_verdicts() -> None:
    detector = NearDuplicateDetector()
    assert detector.check("http://a/1", 1, _fp(0b1111_0000)) == Verdict(True, added=True)
    assert detector.check("http://b/1", 2, _fp(0b1111_0111)) == Verdict(True, 1, 3, True)
    far = detector.check("http://c/1", 3, _fp(0b1111_0000 ^ (0b1111 << 40)))
    assert far == Verdict(True, added=True)
    assert not far.near_duplicate
    # Nearest wins, then the earliest.
    assert detector.check("http://d/1", 4, _fp(0b1111_0110)) == Verdict(True, 2, 1, True)
    assert detector.check("http://e/1", 5, _fp(0b1111_0000)) == Verdict(True, 1, 0, True)
    assert len(detector) == 5


def test_earlier_captures_of_the_same_url_do_not_count() -> None:
    detector = NearDuplicateDetector()
    detector.check("http://a/1", 1, _fp(7))
    assert detector.check("http://a/1", 2, _fp(7)) == Verdict(True, added=True)
    assert detector.check("http://b/1", 3, _fp(7)).duplicate_of == 1


def test_short_texts_are_not_judged() -> None:
    detector = NearDuplicateDetector(min_features=10)
    assert detector.check("http://a/1", 1, Fingerprint(7, 9)) == Verdict(False)
    assert detector.unjudged == 1
    assert len(detector) == 0
    assert detector.check("http://b/1", 2, Fingerprint(7, 10)).judged


# Pairwise at least 16 bits apart.
APART = [0, 0xFFFF, 0xFFFF << 16, 0xFFFF << 32, 0xFFFF << 48]


def test_evict_forgets_the_older_half() -> None:
    detector = NearDuplicateDetector(capacity=4)
    for item in range(4):
        detector.check(f"http://a/{item}", item, _fp(APART[item]))
    assert (len(detector), detector.evicted) == (4, 0)
    detector.check("http://a/4", 4, _fp(APART[4]))  # the young generation is full: 0 and 1 go
    assert (len(detector), detector.evicted) == (3, 2)
    assert detector.check("http://b/0", 10, _fp(APART[0] ^ 1)).duplicate_of is None
    assert detector.check("http://b/2", 11, _fp(APART[2] ^ 1)).duplicate_of == 2


def test_stop_keeps_the_first_pages() -> None:
    detector = NearDuplicateDetector(capacity=2, when_full="stop")
    for item in range(2):
        detector.check(f"http://a/{item}", item, _fp(APART[item]))
    verdict = detector.check("http://a/2", 2, _fp(APART[2]))
    assert (verdict.added, detector.refused, len(detector)) == (False, 1, 2)
    assert detector.check("http://b/0", 3, _fp(APART[0] ^ 1)) == Verdict(True, 0, 1, False)
    assert detector.check("http://b/2", 4, _fp(APART[2])).duplicate_of is None


def test_restore_gives_the_same_answers() -> None:
    rng = random.Random(5)
    bases = [rng.getrandbits(64) for _ in range(30)]
    pages = [(bases[i % 30] ^ (1 << rng.randrange(64)), i, f"http://h/{i}") for i in range(300)]
    live = NearDuplicateDetector(capacity=1000)
    for fp, capture, url in pages:
        live.check(url, capture, _fp(fp))
    restored = NearDuplicateDetector(capacity=1000)
    restored.restore(pages)
    pairs = NearDuplicateDetector(capacity=1000)
    pairs.restore((fp, capture) for fp, capture, _ in pages)
    assert len(pairs) == len(restored) == len(live) == 300
    for base in bases[:10]:
        query = _fp(base ^ 0b11)
        assert restored.check("http://q/", 999, query) == live.check("http://q/", 999, query)
    assert pairs.check(pages[0][2], 1000, _fp(pages[0][0])).duplicate_of == 0  # URL unknown


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"when_full": "drop"}, "when_full"),
        ({"capacity": 1}, "capacity"),
        ({"min_features": 0}, "min_features"),
        ({"k": 4, "blocks": 4}, "blocks"),
    ],
)
def test_bad_parameters(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        NearDuplicateDetector(**changes)  # type: ignore[arg-type]


# -- precision and recall on the synthetic web ---------------------------------------------

SEEDS = (1, 2, 3, 4, 5)


def _measure(seed: int, k: int = 3) -> tuple[int, int, int]:
    """(true detections, false detections, pages that had an earlier page of their group)."""
    web = SyntheticWeb(WebConfig(seed=seed, hosts=30).with_near_duplicate_profile())
    groups = web.near_duplicate_groups()
    group_of = {url: g for g, urls in enumerate(groups) for url in urls}
    urls = sorted(group_of.keys() | set(web.near_duplicate_decoys()))
    detector = NearDuplicateDetector(k=k)
    ids = {url: i for i, url in enumerate(urls)}
    true = false = 0
    for url in urls:
        document = lxml.html.document_fromstring(web.body(url))
        verdict = detector.check(url, ids[url], fingerprint(document))
        if verdict.near_duplicate:
            earlier = urls[verdict.duplicate_of]
            if url in group_of and group_of.get(earlier) == group_of[url]:
                true += 1
            else:
                false += 1
    return true, false, sum(len(group) - 1 for group in groups)


@pytest.fixture(scope="module")
def figures() -> tuple[float, float]:
    true = false = wanted = 0
    for seed in SEEDS:
        t, f, w = _measure(seed)
        true, false, wanted = true + t, false + f, wanted + w
    return true / max(1, true + false), true / wanted


def test_precision_and_recall_on_the_synthetic_web(figures: tuple[float, float]) -> None:
    """Streaming precision and recall, at k = 3, over five webs of 30 hosts with the profile
    (12 groups of 4 pages and 24 decoys each), every page of the profile fed to one detector
    in URL order, fingerprinted from its served body.

    A detection is a page the detector calls a near-duplicate of an earlier page: true if the
    earlier page is of the same group. Precision: true detections / detections. Recall: true
    detections / pages of a group that come after another page of their group (3 a group):
    each such page should be found, the first of a group cannot be.

    Measured: precision 1.00, recall 0.60 (0.36 to 0.75 a web). The target of 0.95 recall is
    not met: the copies differ by up to eight words in 50 to 700 (two copies' edits), more
    than simhash at k = 3 lets through (see crawl/neardup.py, "Choice of features"); the test
    holds the figures reached so that features that lose either show here.
    """
    precision, recall = figures
    assert precision >= 0.95
    assert recall >= 0.55


@pytest.mark.xfail(strict=True, reason="recall at k = 3 is 0.60 (see the test above)")
def test_recall_target_on_the_synthetic_web(figures: tuple[float, float]) -> None:
    assert figures[1] >= 0.95
