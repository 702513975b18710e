"""Tests of the BV graph reader (:mod:`synthweb.bvgraph`) on graphs encoded here.

The encoder below is written from the format's description (WebGraph's ``BVGraph``
documentation and Boldi & Vigna's paper), apart from the decoder: random graphs go through it
and back, with every part of the format in use (references and copy blocks, intervals,
residuals, each code), and one tiny graph is checked against bits worked out by hand.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from synthweb.bvgraph import LawGraph, decode_bv, find_urls_file, read_properties, read_urls
from tests.fakes.bvgraph import encode, runs


def _decoded(data: bytes, properties: dict[str, str]) -> list[list[int]]:
    indptr, indices = decode_bv(data, properties)
    return [list(indices[indptr[x] : indptr[x + 1]]) for x in range(len(indptr) - 1)]


def _random_graph(rng: random.Random, nodes: int) -> list[list[int]]:
    """Successor lists like a web graph's: runs of consecutive pages, lists shared with the
    previous nodes (a site's navigation), far links, self-loops, empty lists."""
    lists: list[list[int]] = []
    for x in range(nodes):
        chosen: set[int] = set()
        if rng.random() < 0.15:
            lists.append([])
            continue
        if lists and rng.random() < 0.6:
            source = lists[max(0, x - rng.randint(1, 9))]
            chosen.update(y for y in source if rng.random() < 0.8)
        if rng.random() < 0.4:
            start = rng.randrange(nodes)
            chosen.update(range(start, min(nodes, start + rng.randint(2, 12))))
        chosen.update(rng.randrange(nodes) for _ in range(rng.randint(0, 6)))
        if rng.random() < 0.2:
            chosen.add(x)
        lists.append(sorted(chosen))
    return lists


def test_a_graph_worked_out_by_hand() -> None:
    # Node 0 -> [1], node 1 -> []; no window, no intervals, zeta_3 residuals:
    # gamma(1) = 010, zeta_3(int2nat(1 - 0) = 2) = 1 011, gamma(0) = 1: 0101 0111.
    properties = {"nodes": "2", "arcs": "1", "windowsize": "0", "minintervallength": "0",
                  "zetak": "3", "compressionflags": ""}
    assert _decoded(b"\x57", properties) == [[1], []]
    assert encode([[1], []], window=0, min_interval=0)[0] == b"\x57"


@pytest.mark.parametrize(
    ("window", "min_interval", "zeta_k"),
    [(7, 4, 3), (0, 4, 3), (1, 2, 2), (3, 0, 1), (7, 3, 5)],
)
def test_random_graphs_decode_to_what_was_encoded(
    window: int, min_interval: int, zeta_k: int
) -> None:
    rng = random.Random(f"{window}:{min_interval}:{zeta_k}")
    for nodes in (1, 5, 300):
        lists = _random_graph(rng, nodes)
        data, properties = encode(lists, window=window, min_interval=min_interval, zeta_k=zeta_k)
        assert _decoded(data, properties) == lists


def test_every_part_of_the_format_is_used_by_the_random_graphs() -> None:
    # Guards the test above: copies, intervals and residuals all occur in its graphs.
    lists = _random_graph(random.Random(1), 300)
    data, properties = encode(lists)
    assert any(lists[x] and set(lists[x]) & set(lists[x - 1]) for x in range(1, 300))
    assert any(runs(successors, 4)[0] for successors in lists)
    assert any(runs(successors, 4)[1] for successors in lists)
    assert len(data) * 8 < 32 * sum(map(len, lists))  # compressed, so not all residuals


def test_compression_flags_choose_the_codes() -> None:
    lists = _random_graph(random.Random(2), 200)
    codes = {"OUTDEGREES": "DELTA", "RESIDUALS": "GAMMA", "REFERENCES": "GAMMA",
             "BLOCKS": "DELTA", "BLOCK_COUNT": "UNARY"}
    flags = " | ".join(f"{part}_{code}" for part, code in codes.items())
    data, properties = encode(lists, codes=codes, flags=flags)
    assert _decoded(data, properties) == lists


def test_unreadable_codes_and_wrong_counts_are_errors() -> None:
    data, properties = encode([[1, 2], [0], []])
    with pytest.raises(ValueError, match="RESIDUALS coded with NIBBLE"):
        decode_bv(data, {**properties, "compressionflags": "RESIDUALS_NIBBLE"})
    with pytest.raises(ValueError, match="unknown compression flag"):
        decode_bv(data, {**properties, "compressionflags": "LEAVES_GAMMA"})
    with pytest.raises(ValueError, match="3 arcs decoded, the properties say 4"):
        decode_bv(data, {**properties, "arcs": "4"})


def test_properties_files_are_read_as_java_writes_them(tmp_path: Path) -> None:
    path = tmp_path / "g.properties"
    path.write_text("#BVGraph properties\n! a comment\nnodes=3\narcs : 2\n"
                    "compressionflags=\n\nzetak = 3\n", encoding="latin-1")
    assert read_properties(path) == {"nodes": "3", "arcs": "2", "compressionflags": "",
                                     "zetak": "3"}


def _write_graph(base: Path, lists: list[list[int]]) -> None:
    data, properties = encode(lists)
    Path(f"{base}.graph").write_bytes(data)
    Path(f"{base}.properties").write_text(
        "#BVGraph properties\n" + "".join(f"{k}={v}\n" for k, v in properties.items()),
        encoding="latin-1",
    )


def test_a_graph_is_loaded_with_its_urls_plain_or_gzipped(tmp_path: Path) -> None:
    base = tmp_path / "web"
    _write_graph(base, [[1, 2], [0], [2]])
    graph = LawGraph.load(base)
    assert (graph.nodes, graph.arcs, graph.urls) == (3, 4, None)
    assert [list(graph.successors(x)) for x in range(3)] == [[1, 2], [0], [2]]
    assert [graph.outdegree(x) for x in range(3)] == [2, 1, 1]
    assert find_urls_file(base) is None

    urls = ["http://a.example/", "http://a.example/caf\u00e9", "http://b.example/x"]
    with gzip.open(f"{base}.urls.gz", "wt", encoding="utf-8") as stream:
        stream.write("\n".join(urls) + "\n")
    assert find_urls_file(base) == Path(f"{base}.urls.gz")
    assert LawGraph.load(base).urls == urls
    assert LawGraph.load(base, urls=False).urls is None

    Path(f"{base}.urls").write_bytes(b"http://a.example/\r\nhttp://a.example/\xe9\nhttp://c/\n")
    assert find_urls_file(base) == Path(f"{base}.urls")
    assert list(read_urls(f"{base}.urls")) == [
        "http://a.example/", "http://a.example/\ufffd", "http://c/"]

    Path(f"{base}.urls").write_text("http://a.example/\n", encoding="utf-8")
    with pytest.raises(ValueError, match="1 URLs for 3 nodes"):
        LawGraph.load(base)


def test_a_graph_of_another_class_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "web"
    _write_graph(base, [[0]])
    properties = Path(f"{base}.properties")
    properties.write_text(properties.read_text().replace("BVGraph", "EFGraph"))
    with pytest.raises(ValueError, match="not a BVGraph"):
        LawGraph.load(base)
