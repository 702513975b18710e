"""Near-duplicate pages: a page's fingerprint, and whether an earlier page had a close one.

:func:`fingerprint` (or :func:`fingerprint_text`) gives the 64-bit simhash of a page's
features, with their count: the distinct words of its main text
(:func:`crawl.content.text.main_text`), lower-cased, without dates and words holding a digit.
:meth:`NearDuplicateDetector.check` says whether an earlier capture of another URL lies within
``k`` bits (``neardup.max_distance``, 3), which one and how far, then adds the page to the
index. A short page, with fewer than ``min_features`` (:data:`MIN_FEATURES`) features, is
judged by its exact set of features instead (distance 0); one with fewer than
``min_exact_features`` (:data:`MIN_EXACT_FEATURES`) is neither judged nor added.

The detector holds at most ``capacity`` pages, about 100 bytes each, in two generations of
``capacity / 2``: when full, ``when_full="evict"`` forgets the older one
(:attr:`NearDuplicateDetector.evicted`), ``"stop"`` judges later pages without adding them
(:attr:`NearDuplicateDetector.refused`).

README.md ("How it works", Near-duplicates) places it in the job; BENCHMARKS.md
("Near-duplicates: quality", with the choice of features) has the measurements.
"""

from __future__ import annotations

import array
import dataclasses
import hashlib
import re
from collections.abc import Iterable
from typing import Literal, NamedTuple

import lxml.etree

from crawl.config import NearDupSection
from crawl.content.simhash import SimhashIndex, simhash
from crawl.content.text import main_text

__all__ = [
    "MIN_EXACT_FEATURES",
    "MIN_FEATURES",
    "Fingerprint",
    "NearDuplicateDetector",
    "Verdict",
    "content_features",
    "fingerprint",
    "fingerprint_text",
]

_DEFAULTS = NearDupSection()
#: Fewest features (distinct words) of a page judged by distance (``neardup.min_features``).
MIN_FEATURES = _DEFAULTS.min_features
#: Fewest features of a page judged at all (short pages by their exact set of features;
#: ``neardup.min_exact_features``).
MIN_EXACT_FEATURES = _DEFAULTS.min_exact_features

_WORD = re.compile(r"\w+", re.UNICODE)
_DIGIT = re.compile(r"\d")
_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_WEEKDAYS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday "
    "mon tue tues wed thu thur thurs fri sat sun".split()
)
_DATE_WORDS = _MONTHS | _WEEKDAYS


class Fingerprint(NamedTuple):
    """A page's simhash, how many features it was made of, and how many words its text has."""

    value: int
    features: int
    words: int = 0

    @property
    def repetitive(self) -> bool:
        """Whether the text says a few words over and over: at least 30 words, of which at
        most a third, and at most 20, distinct (a link farm's keywords; a reader's text of
        that length uses far more)."""
        return self.words >= 30 and self.features <= min(20, self.words // 3)


def content_features(text: str) -> list[str]:
    """The distinct words of ``text``, lower-cased, in order of first appearance, without the
    words that hold a digit and without dates: month and weekday names (and their
    abbreviations) next to a number ("3 march", "march 3", "mar. 3", "3rd of march", "tuesday,
    3 march"; a weekday also before a month). O(characters)."""
    words = _WORD.findall(text.lower())
    dated = [i for i, word in enumerate(words) if word in _DATE_WORDS]
    if dated:
        drop = {i for i in dated if _in_date(words, i)}
        if drop:
            words = [word for i, word in enumerate(words) if i not in drop]
    return [word for word in dict.fromkeys(words) if not _DIGIT.search(word)]


def _in_date(words: list[str], i: int) -> bool:
    after = words[i + 1] if i + 1 < len(words) else ""
    before = words[i - 1] if i else ""
    if after[:1].isdigit() or before[:1].isdigit():
        return True
    if before == "of" and i >= 2 and words[i - 2][:1].isdigit():
        return True
    return words[i] in _WEEKDAYS and after in _MONTHS


def fingerprint_text(text: str) -> Fingerprint:
    """The fingerprint of a page's main text."""
    features = content_features(text)
    return Fingerprint(simhash(features), len(features), len(_WORD.findall(text)))


def fingerprint(document: lxml.etree._Element) -> Fingerprint:
    """The fingerprint of an lxml.html document: of its main text (:func:`main_text`)."""
    return fingerprint_text(main_text(document))


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    """What :meth:`NearDuplicateDetector.check` found for a page."""

    #: False when the page has too few features to be judged (then nothing else is set).
    judged: bool
    #: The capture id of the nearest earlier capture of another URL within distance k
    #: (the earliest of the nearest), or None.
    duplicate_of: int | None = None
    #: Its Hamming distance (0..k), or None.
    distance: int | None = None
    #: Whether the page went into the index.
    added: bool = False

    @property
    def near_duplicate(self) -> bool:
        return self.duplicate_of is not None


class _Generation:
    """Pages in one index: slot -> capture id and URL key (the index holds fingerprint, slot;
    short pages are in ``short``: fingerprint -> the slots of the pages with it, earliest
    first)."""

    __slots__ = ("captures", "index", "short", "urls")

    def __init__(self, k: int, blocks: int) -> None:
        self.index = SimhashIndex(k=k, blocks=blocks)
        self.short: dict[int, list[int]] = {}
        self.captures = array.array("q")
        self.urls = array.array("q")

    def __len__(self) -> int:
        return len(self.captures)

    def add(self, fingerprint: int, capture_id: int, url_key: int, short: bool) -> None:
        slot = len(self.captures)
        if short:
            self.short.setdefault(fingerprint, []).append(slot)
        else:
            self.index.add(fingerprint, slot)
        self.captures.append(capture_id)
        self.urls.append(url_key)

    def near(self, fingerprint: int, short: bool) -> Iterable[tuple[int, int]]:
        """(slot, distance) of the pages within the index's ``k`` (short pages: with the same
        fingerprint), nearest first, then earliest."""
        if short:
            return ((slot, 0) for slot in self.short.get(fingerprint, ()))
        return self.index.near(fingerprint)


def url_key(url: str) -> int:
    """A 63-bit key of a URL (non-negative; 0 stands for "unknown")."""
    key = int.from_bytes(hashlib.blake2b(url.encode("utf-8"), digest_size=8).digest(), "little")
    return (key >> 1) or 1


class NearDuplicateDetector:
    """The near-duplicates among pages seen one after another (see the module docstring).

    ``k``, ``blocks``: of the :class:`~crawl.content.simhash.SimhashIndex`; ``capacity``: most pages
    held; ``when_full``: ``"evict"`` the older half, or ``"stop"`` adding; ``min_features``:
    fewest features of a page judged by distance, ``min_exact_features`` of a short page judged
    by its exact set of features. Not thread-safe. The job's index is sharded over keyed state
    (:mod:`crawl.content.neardup_index`); this one-instance index measures the fingerprint's
    quality (``bench/neardup_quality.py``) and is what the sharded one is checked against.
    """

    def __init__(
        self,
        k: int = _DEFAULTS.max_distance,
        blocks: int = 4,
        capacity: int = _DEFAULTS.capacity,
        when_full: Literal["evict", "stop"] = "evict",
        min_features: int = MIN_FEATURES,
        min_exact_features: int = MIN_EXACT_FEATURES,
    ) -> None:
        if when_full not in ("evict", "stop"):
            raise ValueError(f"when_full must be 'evict' or 'stop', got {when_full!r}")
        if capacity < 2:
            raise ValueError(f"capacity must be at least 2, got {capacity!r}")
        if min_features < 1:
            raise ValueError(f"min_features must be at least 1, got {min_features!r}")
        if not 1 <= min_exact_features <= min_features:
            raise ValueError("min_exact_features must be from 1 to min_features, got "
                             f"{min_exact_features!r}")
        SimhashIndex(k=k, blocks=blocks)  # fails now on a bad k or blocks
        self.k = k
        self.blocks = blocks
        self.capacity = capacity
        self.when_full = when_full
        self.min_features = min_features
        self.min_exact_features = min_exact_features
        self._young = _Generation(k, blocks)
        self._old: _Generation | None = None
        #: Pages forgotten to make room (``"evict"``).
        self.evicted = 0
        #: Judged pages not added because the index was full (``"stop"``).
        self.refused = 0
        #: Pages not judged: fewer than ``min_exact_features`` features.
        self.unjudged = 0
        #: Judged pages not added: a capture of their URL within ``k`` is held (:meth:`check`).
        self.held_again = 0

    def __len__(self) -> int:
        """Pages held."""
        return len(self._young) + (len(self._old) if self._old is not None else 0)

    def check(self, url: str, capture_id: int, fingerprint: Fingerprint) -> Verdict:
        """Judge a page (a capture of ``url``; ``capture_id``: the caller's integer name for
        it, what later verdicts return) and add it. Earlier captures of the same URL do not
        count. O(log N) amortised, see :meth:`SimhashIndex.near`.

        A capture is not added when the index holds one of the same URL within distance
        ``k`` already (:attr:`held_again` counts them): a continuous crawl fetches its pages
        again and again, and a page that changed little would otherwise fill the index with
        copies of itself. A page that changed beyond ``k`` is added again. A short page (see
        the module docstring) is judged and held by its exact set of features, apart from the
        others."""
        if fingerprint.features < self.min_exact_features:
            self.unjudged += 1
            return Verdict(judged=False)
        short = fingerprint.features < self.min_features
        key = url_key(url)
        match, held = self._nearest(fingerprint.value, key, short)
        if held:
            self.held_again += 1
            added = False
        else:
            added = self._add(fingerprint.value, capture_id, key, short)
        if match is None:
            return Verdict(judged=True, added=added)
        return Verdict(True, match[1], match[0], added)

    def restore(self, entries: Iterable[tuple[int, ...]], short: bool = False) -> None:
        """Add stored pages again after a restart: ``(fingerprint, capture_id)`` or
        ``(fingerprint, capture_id, url)`` tuples, oldest first (what the job keeps in its
        state); ``short``: they are short pages. Without the URL, a restored page may be found
        as a near-duplicate of a later capture of its own URL. Capacity applies as in
        :meth:`check`. O(N log N)."""
        for entry in entries:
            fp, capture_id = entry[0], entry[1]
            self._add(fp, capture_id, url_key(entry[2]) if len(entry) > 2 else 0, short)

    def _nearest(self, fingerprint: int, key: int,
                 short: bool) -> tuple[tuple[int, int] | None, bool]:
        """(distance, capture id) of the nearest, earliest page of another URL, or None; and
        whether a capture of the URL ``key`` itself is within ``k`` (short pages: among the
        short pages, with the same fingerprint)."""
        best: tuple[int, int, int] | None = None  # (distance, age rank, capture id)
        held = False
        for rank, generation in enumerate((self._old, self._young)):
            if generation is None:
                continue
            found_other = False
            for slot, distance in generation.near(fingerprint, short):
                other = generation.urls[slot]
                if other and other == key:
                    held = True
                elif not found_other:
                    # near() answers nearest first, then earliest: the rest are no better.
                    found_other = True
                    candidate = (distance, rank, generation.captures[slot])
                    if best is None or candidate[:2] < best[:2]:
                        best = candidate
                if held and found_other:
                    break
        return (None if best is None else (best[0], best[2])), held

    def _add(self, fingerprint: int, capture_id: int, key: int, short: bool) -> bool:
        if self.when_full == "stop":
            if len(self._young) >= self.capacity:
                self.refused += 1
                return False
        elif len(self._young) >= self.capacity // 2:
            if self._old is not None:
                self.evicted += len(self._old)
            self._old, self._young = self._young, _Generation(self.k, self.blocks)
        self._young.add(fingerprint, capture_id, key, short)
        return True
