"""The near-duplicate detector: its verdicts, its bounds, its restore, and its precision and
recall on the synthetic web's near-duplicate profile (its groups, and its edited groups)."""

from __future__ import annotations

import random
from typing import NamedTuple

import lxml.html
import pytest

from crawl.content.neardup import (
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
    assert fingerprint_text("The cat, the DOG; 2026").words == 5


@pytest.mark.parametrize(
    ("words", "distinct", "repetitive"),
    [
        (60, 6, True),  # a link farm's keywords
        (30, 10, True),
        (30, 11, False),
        (29, 3, False),  # too short to tell
        (3000, 20, True),
        (3000, 21, False),  # a long text of few words, but more than a farm's keywords
    ],
)
def test_a_text_that_says_a_few_words_over_and_over_is_repetitive(
    words: int, distinct: int, repetitive: bool
) -> None:
    assert Fingerprint(0, distinct, words).repetitive is repetitive


@pytest.mark.parametrize(
    ("text", "features"),
    [
        ("Published 3 March 2026, updated 14:02", ["published", "updated"]),
        ("Last updated Tuesday, 3rd of March 2026", ["last", "updated", "of"]),
        ("Mar. 3, 2026 and Dec 24", ["and"]),
        ("June 2026 issue", ["issue"]),
        ("They may march on 3 roads in May", ["they", "may", "march", "on", "roads", "in"]),
    ],
)
def test_features_leave_dates_out(text: str, features: list[str]) -> None:
    assert content_features(text) == features


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
    assert detector.check("http://a/1", 2, _fp(7 ^ 0b1000)) == Verdict(True, added=False)
    assert detector.check("http://b/1", 3, _fp(7)).duplicate_of == 1


def test_a_refetched_page_is_held_once_until_it_changes_beyond_k() -> None:
    """A continuous crawl's refetches do not fill the index with copies of one page."""
    detector = NearDuplicateDetector(k=3)
    detector.check("http://b/1", 1, _fp(0b111))
    detector.check("http://a/1", 2, _fp(0))
    for capture in range(3, 10):  # 1 bit from b/1, 2 from a/1's capture held: b/1 is nearer
        verdict = detector.check("http://a/1", capture, _fp(0b11))
        assert verdict == Verdict(True, 1, 1, False)  # judged against b/1, not added
    assert (len(detector), detector.held_again) == (2, 7)
    changed = 0xFF << 8  # 8 bits from every capture held
    assert detector.check("http://a/1", 10, _fp(changed)) == Verdict(True, added=True)
    assert detector.check("http://c/1", 11, _fp(changed ^ 1)).duplicate_of == 10
    assert len(detector) == 4


def test_the_shortest_texts_are_not_judged() -> None:
    detector = NearDuplicateDetector(min_features=10, min_exact_features=4)
    assert detector.check("http://a/1", 1, Fingerprint(7, 3)) == Verdict(False)
    assert detector.unjudged == 1
    assert len(detector) == 0
    assert detector.check("http://b/1", 2, Fingerprint(7, 4)).judged


def test_short_pages_are_judged_by_their_exact_set_of_features() -> None:
    """A short page matches only a short page with the same simhash (the same distinct words),
    never one a few bits away, and never a long page."""
    detector = NearDuplicateDetector(min_features=10, min_exact_features=4)
    assert detector.check("http://farm/1", 1, Fingerprint(0b1011, 6)) == Verdict(True, added=True)
    assert detector.check("http://farm/2", 2, Fingerprint(0b1011, 6)) == Verdict(True, 1, 0, True)
    assert detector.check("http://farm/3", 3, Fingerprint(0b1010, 6)) == Verdict(True, added=True)
    assert detector.check("http://long/1", 4, Fingerprint(0b1011, 10)) == Verdict(True, added=True)
    assert detector.check("http://short/1", 5, Fingerprint(0b1111, 6)) == Verdict(True, added=True)
    # A capture of the same URL does not count, and is not held twice.
    assert detector.check("http://farm/3", 6, Fingerprint(0b1010, 6)) == Verdict(True, added=False)
    assert (len(detector), detector.held_again) == (5, 1)


def test_short_pages_are_evicted_and_restored_like_the_others() -> None:
    detector = NearDuplicateDetector(capacity=4, min_features=10, min_exact_features=4)
    for item in range(5):
        detector.check(f"http://a/{item}", item, Fingerprint(APART[item], 6))
    assert (len(detector), detector.evicted) == (3, 2)
    assert not detector.check("http://b/0", 10, Fingerprint(APART[0], 6)).near_duplicate
    assert detector.check("http://b/4", 11, Fingerprint(APART[4], 6)).duplicate_of == 4
    restored = NearDuplicateDetector(min_features=10, min_exact_features=4)
    restored.restore([(APART[1], 1, "http://a/1")], short=True)
    restored.restore([(APART[2], 2, "http://a/2")])
    assert restored.check("http://c/1", 3, Fingerprint(APART[1], 6)).duplicate_of == 1
    assert not restored.check("http://c/2", 4, Fingerprint(APART[2], 6)).near_duplicate
    assert restored.check("http://c/3", 5, Fingerprint(APART[2] ^ 1, 32)).duplicate_of == 2


def test_min_exact_features_must_lie_from_1_to_min_features() -> None:
    with pytest.raises(ValueError, match="min_exact_features"):
        NearDuplicateDetector(min_features=10, min_exact_features=11)
    with pytest.raises(ValueError, match="min_exact_features"):
        NearDuplicateDetector(min_exact_features=0)


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


class Counts(NamedTuple):
    """Detections of one kind of page: true, false, and how many there should be."""

    true: int = 0
    false: int = 0
    wanted: int = 0

    def __add__(self, other: tuple[int, ...]) -> Counts:  # type: ignore[override]
        return Counts(*(a + b for a, b in zip(self, other, strict=True)))

    @property
    def precision(self) -> float:
        return self.true / max(1, self.true + self.false)

    @property
    def recall(self) -> float:
        return self.true / max(1, self.wanted)


def measure(seed: int, k: int = 3) -> dict[str, Counts]:
    """Detections on one web with the profile, by kind of page: ``"groups"`` (copies of one
    article), ``"edited"`` (copies with words changed), ``"decoys"`` (every detection false)."""
    web = SyntheticWeb(WebConfig(seed=seed, hosts=30).with_near_duplicate_profile())
    kinds = {"groups": web.near_duplicate_groups(), "edited": web.near_duplicate_edited_groups()}
    group_of = {
        url: (kind, number)
        for kind, groups in kinds.items()
        for number, urls in enumerate(groups)
        for url in urls
    }
    urls = sorted(group_of.keys() | set(web.near_duplicate_decoys()))
    detector = NearDuplicateDetector(k=k)
    found = {kind: [0, 0] for kind in (*kinds, "decoys")}
    for capture, url in enumerate(urls):
        document = lxml.html.document_fromstring(web.body(url))
        verdict = detector.check(url, capture, fingerprint(document))
        if verdict.near_duplicate:
            group = group_of.get(url)
            true = group is not None and group_of.get(urls[verdict.duplicate_of]) == group
            found[group[0] if group else "decoys"][0 if true else 1] += 1
    wanted = {kind: sum(len(urls) - 1 for urls in groups) for kind, groups in kinds.items()}
    return {kind: Counts(t, f, wanted.get(kind, 0)) for kind, (t, f) in found.items()}


@pytest.fixture(scope="module")
def figures() -> dict[str, Counts]:
    total = {kind: Counts() for kind in ("groups", "edited", "decoys")}
    for seed in SEEDS:
        for kind, counts in measure(seed).items():
            total[kind] += counts
    return total


def test_precision_and_recall_on_near_duplicate_groups(figures: dict[str, Counts]) -> None:
    """Streaming precision and recall, at k = 3, over five webs of 30 hosts with the profile
    (12 groups, 12 edited groups of 4 pages and 48 decoys each), every page of the profile fed
    to one detector in URL order, fingerprinted from its served body.

    A detection is a page the detector calls a near-duplicate of an earlier page: true if the
    earlier page is of the same group. Precision: true detections / detections (a detection
    of a decoy counts against it). Recall: true detections / pages of a group that come after
    another page of their group (3 a group): each such page should be found, the first of a
    group cannot be.

    The groups are near-duplicates as Manku et al. define them (the same article; its own
    advertisement, counters, dates, tracking parameters and markup on each page). Measured:
    precision 1.00, recall 1.00 (180 of 180); without dropping advertisements from the main
    text, recall 0.65; without leaving dates out of the features, 0.85 (the month names).
    """
    groups, decoys = figures["groups"], figures["decoys"]
    precision = groups.true / max(1, groups.true + groups.false + decoys.false)
    print(f"groups: precision {precision:.2f}, recall {groups.recall:.2f} {groups}")
    assert precision >= 0.95
    assert groups.recall >= 0.95


def test_precision_and_recall_on_edited_groups(figures: dict[str, Counts]) -> None:
    """As above, on the edited groups: one to four words of the article changed on each copy
    after the first, so two copies differ by up to eight words in 50 to 700, which a 64-bit
    simhash at k = 3 does not always hold: with N features and c changed, a bit flips with a
    probability of about sqrt(2c / N) / pi, five bits and more for a few words in a short
    article (see crawl/content/neardup.py, "Choice of features").

    Measured: precision 1.00, recall 0.68 (123 of 180; 0.56 to 0.78 a web). The floor holds
    the figure reached, so that a change that loses recall here shows.
    """
    edited = figures["edited"]
    print(f"edited: precision {edited.precision:.2f}, recall {edited.recall:.2f} {edited}")
    assert edited.precision >= 0.95
    assert edited.recall >= 0.65
