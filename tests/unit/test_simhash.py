"""Simhash fingerprints and the permuted-table index, checked against a brute-force scan."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawl.content.simhash import SimhashIndex, hamming, simhash, text_features

ARTICLE = (
    "The river rose overnight and the old bridge closed before dawn. Engineers from the county "
    "inspected the piers at first light and found the eastern span sound, but the western "
    "approach had lost part of its embankment to the current. Traffic was sent twenty miles "
    "north to the ferry crossing, where queues formed within the hour. The mayor said repairs "
    "would take at least three weeks and asked residents to avoid the riverside paths, which "
    "remain under water in several places. Schools on the western bank will open late."
)


def test_features_are_lower_cased_word_shingles() -> None:
    assert text_features("A b, C d!") == ["a b c", "b c d"]
    assert text_features("one two") == ["one", "two"]
    assert text_features("") == []


def test_simhash_is_stable_and_similar_texts_are_close() -> None:
    fingerprint = simhash(text_features(ARTICLE))
    assert fingerprint == simhash(text_features(ARTICLE))
    edited = ARTICLE.replace("three weeks", "four weeks").replace("late", "on time")
    assert hamming(fingerprint, simhash(text_features(edited))) <= 6
    other = "Completely unrelated text about compilers, registers and instruction scheduling " * 3
    assert hamming(fingerprint, simhash(text_features(other))) >= 12
    assert simhash([]) == 0


def test_simhash_golden_values() -> None:
    # A change of feature hashing or voting would silently change every stored fingerprint.
    assert simhash(["a b c", "b c d"]) == simhash(["b c d", "a b c"]) == 0x306822880600CC30
    assert simhash(text_features("The quick brown fox jumps over the lazy dog.")) == (
        0x7566F07CE82FB177
    )


def _brute(stored: list[tuple[int, int]], query: int, k: int) -> list[tuple[int, int]]:
    found = [(item, hamming(fp, query)) for fp, item in stored if hamming(fp, query) <= k]
    return sorted(found, key=lambda pair: (pair[1], pair[0]))


def _flip(fp: int, bits: int, rng: random.Random) -> int:
    for bit in rng.sample(range(64), bits):
        fp ^= 1 << bit
    return fp


@pytest.mark.parametrize(("k", "blocks"), [(3, 4), (3, 6), (2, 4), (0, 1), (1, 3)])
def test_index_finds_exactly_what_a_scan_finds(k: int, blocks: int) -> None:
    rng = random.Random(k * 10 + blocks)
    index = SimhashIndex(k=k, blocks=blocks, buffer=37)
    stored: list[tuple[int, int]] = []
    bases = [rng.getrandbits(64) for _ in range(60)]
    for item in range(1500):
        fp = _flip(rng.choice(bases), rng.randint(0, 5), rng)
        index.add(fp, item)
        stored.append((fp, item))
        if item % 97 == 0:  # queries while runs and the buffer change
            query = _flip(rng.choice(bases), rng.randint(0, 4), rng)
            assert index.near(query) == _brute(stored, query, k)
    assert len(index) == 1500
    for _ in range(200):
        query = _flip(rng.choice(bases), rng.randint(0, 6), rng)
        assert index.near(query) == _brute(stored, query, k)
    assert index.tables == len(list(__import__("itertools").combinations(range(blocks), k)))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, (1 << 64) - 1), min_size=0, max_size=40),
    st.integers(0, (1 << 64) - 1),
    st.integers(0, 3),
)
def test_index_matches_a_scan_for_any_fingerprints(
    fingerprints: list[int], query: int, flips: int
) -> None:
    index = SimhashIndex(k=3, blocks=4, buffer=8)
    index.add_many(fingerprints[:10], list(range(10))[: len(fingerprints[:10])])
    for item, fp in enumerate(fingerprints[10:], start=10):
        index.add(fp, item)
    stored = [(fp, item) for item, fp in enumerate(fingerprints)]
    near_one = _flip(fingerprints[0], flips, random.Random(query)) if fingerprints else query
    for q in (query, near_one):
        assert index.near(q) == _brute(stored, q, 3)


def test_extreme_fingerprints() -> None:
    ones = (1 << 64) - 1
    for k, blocks in ((0, 1), (3, 4)):
        index = SimhashIndex(k=k, blocks=blocks, buffer=2)
        index.add_many([ones, 0, ones ^ 1], [1, 2, 3])
        assert index.near(ones) == _brute([(ones, 1), (0, 2), (ones ^ 1, 3)], ones, k)
        assert index.near(0) == [(2, 0)]


def test_bad_parameters() -> None:
    with pytest.raises(ValueError, match="blocks"):
        SimhashIndex(k=4, blocks=4)
    with pytest.raises(ValueError, match="as many ids"):
        SimhashIndex().add_many([1, 2], [1])
