"""Graphs in the WebGraph BV format, as LAW publishes its web graphs: read into CSR arrays.

LAW (the Laboratory for Web Algorithmics, law.di.unimi.it) publishes each graph as
``BASENAME.graph`` (the successor lists, BV-compressed: P. Boldi and S. Vigna, "The WebGraph
Framework I: Compression Techniques", WWW 2004) with ``BASENAME.properties`` (a Java properties
file: node and arc counts and the compression parameters), and a web graph also as
``BASENAME.urls`` or ``BASENAME.urls.gz``: one URL a line, the URL of node ``i`` on line ``i``.
:meth:`LawGraph.load` reads them; nothing else (no offsets file) is needed, since the graph is
read from start to end.

The successor list of node ``x`` is coded as: its outdegree; if the window is not zero, a
reference ``r`` (0: none) and, when ``r > 0``, copy blocks saying which successors of node
``x - r`` are also successors of ``x`` (alternately copied and skipped, the first block
possibly empty, what follows the last block copied when the block count is even); then the
other successors, as intervals of consecutive nodes (when ``minintervallength`` is not 0) and
residuals, each of these as a gap from the previous one (the first relative to ``x``). The
integers are instantaneous codes (gamma, delta, zeta_k, unary), most significant bit first,
chosen per component by the ``compressionflags`` property (empty: gamma for outdegrees, blocks,
block counts and intervals, unary for references, zeta_k for residuals). Golomb and nibble
codes are not read (no LAW graph uses them).

Standard library only: the arrays are :class:`array.array` (4 bytes a node id, 8 an offset),
so a graph of a few million arcs takes tens of megabytes, not the gigabyte of Python lists.
Decoding runs at about two million arcs a second.
"""

from __future__ import annotations

import array
import dataclasses
import gzip
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

__all__ = ["LawGraph", "decode_bv", "find_urls_file", "read_properties", "read_urls"]

# The components of a successor list whose code compressionflags can change, and their
# default codes (BVGraph's).
_DEFAULT_CODES = {
    "OUTDEGREES": "GAMMA",
    "REFERENCES": "UNARY",
    "BLOCKS": "GAMMA",
    "BLOCK_COUNT": "GAMMA",
    "RESIDUALS": "ZETA",
    "OFFSETS": "GAMMA",
}
_READABLE_CODES = frozenset({"GAMMA", "DELTA", "ZETA", "UNARY"})


def read_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """The key/value pairs of a Java properties file (``#`` and ``!`` comments, ``=`` or ``:``
    separators; the escapes such files may hold do not occur in graph properties)."""
    values: dict[str, str] = {}
    with open(path, encoding="latin-1") as stream:
        for line in stream:
            line = line.strip()
            if not line or line[0] in "#!":
                continue
            cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
            if cut < 0:
                continue
            values[line[:cut].strip()] = line[cut + 1 :].strip()
    return values


def _codes(flags: str) -> dict[str, str]:
    """Component -> code name, from a compressionflags value like
    ``OUTDEGREES_DELTA | RESIDUALS_ZETA``."""
    codes = dict(_DEFAULT_CODES)
    for flag in filter(None, (part.strip() for part in flags.split("|"))):
        component, _, code = flag.rpartition("_")
        if component not in codes:
            raise ValueError(f"unknown compression flag {flag!r}")
        codes[component] = code
    for component, code in codes.items():
        if code not in _READABLE_CODES and component != "OFFSETS":
            raise ValueError(f"{component} coded with {code}: not supported")
    return codes


class _BitReader:
    """Reads instantaneous codes from a byte string, most significant bit first."""

    def __init__(self, data: bytes, zeta_k: int) -> None:
        # A string of '0'/'1' characters: str.index and int(..., 2) do the bit work in C.
        # Padding lets the last code's reads past the end fail only as a count mismatch.
        self.bits = format(int.from_bytes(data, "big"), f"0{len(data) * 8}b") + "0" * 64
        self.end = len(data) * 8
        self.pos = 0
        self.k = zeta_k

    def unary(self) -> int:
        pos = self.pos
        one = self.bits.find("1", pos)
        if one < 0 or one >= self.end:
            raise ValueError("the graph file ends inside a code")
        self.pos = one + 1
        return one - pos

    def bits_int(self, width: int) -> int:
        if width == 0:
            return 0
        pos = self.pos
        self.pos = pos + width
        return int(self.bits[pos : pos + width], 2)

    def gamma(self) -> int:
        msb = self.unary()
        return ((1 << msb) | self.bits_int(msb)) - 1

    def delta(self) -> int:
        msb = self.gamma()
        return ((1 << msb) | self.bits_int(msb)) - 1

    def zeta(self) -> int:
        h = self.unary()
        k = self.k
        left = 1 << (h * k)
        m = self.bits_int(h * k + k - 1)
        if m < left:
            return m + left - 1
        return (m << 1) + self.bits_int(1) - 1

    def reader(self, code: str) -> Callable[[], int]:
        return {"GAMMA": self.gamma, "DELTA": self.delta, "ZETA": self.zeta,
                "UNARY": self.unary}[code]


def _nat2int(value: int) -> int:
    return value >> 1 if value % 2 == 0 else -((value + 1) >> 1)


def decode_bv(
    data: bytes, properties: Mapping[str, str]
) -> tuple[array.array[int], array.array[int]]:
    """The successor lists of a BV graph file's bytes, as CSR arrays ``(indptr, indices)``:
    the successors of node ``x`` are ``indices[indptr[x]:indptr[x + 1]]``, increasing.

    ``properties`` are the graph's ``.properties`` (``nodes``, ``arcs``, ``windowsize``,
    ``minintervallength``, ``zetak``, ``compressionflags``). Raises ValueError when the file
    does not decode to the counts they give.
    """
    nodes = int(properties["nodes"])
    arcs = int(properties["arcs"])
    window = int(properties.get("windowsize", "7"))
    min_interval = int(properties.get("minintervallength", "4"))
    codes = _codes(properties.get("compressionflags", ""))
    bits = _BitReader(data, int(properties.get("zetak", "3")))
    outdegree = bits.reader(codes["OUTDEGREES"])
    reference = bits.reader(codes["REFERENCES"])
    block_count = bits.reader(codes["BLOCK_COUNT"])
    block = bits.reader(codes["BLOCKS"])
    residual = bits.reader(codes["RESIDUALS"])
    gamma = bits.gamma

    indptr = array.array("q", [0])
    indices = array.array("i")
    recent: list[list[int]] = [[] for _ in range(window + 1)]
    for x in range(nodes):
        degree = outdegree()
        successors: list[int] = []
        if degree:
            copied: list[int] = []
            ref = reference() if window > 0 else 0
            if ref > 0:
                if ref > x:
                    raise ValueError(f"node {x} refers to node {x - ref}")
                source = recent[(x - ref) % (window + 1)]
                count = block_count()
                at = 0
                take = True
                for i in range(count):
                    length = block() + (1 if i else 0)
                    if take:
                        copied.extend(source[at : at + length])
                    at += length
                    take = not take
                if take:
                    copied.extend(source[at:])
            extra = degree - len(copied)
            successors = copied  # a new list: extended in place below
            if extra > 0 and min_interval:
                intervals = gamma()
                previous = x
                for i in range(intervals):
                    left = previous + (_nat2int(gamma()) if i == 0 else gamma() + 1)
                    length = gamma() + min_interval
                    successors.extend(range(left, left + length))
                    previous = left + length
                    extra -= length
            if extra > 0:
                value = x + _nat2int(residual())
                successors.append(value)
                for _ in range(extra - 1):
                    value += residual() + 1
                    successors.append(value)
            if extra < 0 or len(successors) != degree:
                raise ValueError(f"node {x}: {len(successors)} successors decoded, not {degree}")
            successors.sort()
            if successors[0] < 0 or successors[-1] >= nodes:
                raise ValueError(f"node {x} has a successor out of range")
        recent[x % (window + 1)] = successors
        indices.extend(successors)
        indptr.append(len(indices))
    if len(indices) != arcs:
        raise ValueError(f"{len(indices)} arcs decoded, the properties say {arcs}")
    if bits.pos > bits.end:
        raise ValueError("the graph file ends inside a code")
    return indptr, indices


def find_urls_file(basename: str | os.PathLike[str]) -> Path | None:
    """``BASENAME.urls`` or ``BASENAME.urls.gz``, whichever exists (the plain one first)."""
    for suffix in (".urls", ".urls.gz"):
        path = Path(f"{os.fspath(basename)}{suffix}")
        if path.exists():
            return path
    return None


def read_urls(path: str | os.PathLike[str]) -> Iterator[str]:
    """The URLs of a ``.urls`` or ``.urls.gz`` file, one a line, in node order. Bytes that are
    not UTF-8 are replaced (U+FFFD), so every URL is a str that encodes back."""
    opener = gzip.open if os.fspath(path).endswith(".gz") else open
    with opener(path, "rb") as stream:
        for line in stream:
            yield line.rstrip(b"\r\n").decode("utf-8", "replace")


@dataclasses.dataclass(frozen=True, eq=False)
class LawGraph:
    """A graph in CSR form (``indptr``, ``indices``: see :func:`decode_bv`), with the URL of each
    node when the graph came with them."""

    indptr: array.array[int]
    indices: array.array[int]
    properties: Mapping[str, str] = dataclasses.field(default_factory=dict)
    urls: list[str] | None = None

    @classmethod
    def load(cls, basename: str | os.PathLike[str], *, urls: bool = True) -> LawGraph:
        """Read ``BASENAME.properties`` and ``BASENAME.graph``, and with ``urls`` the URL file
        when there is one (:func:`find_urls_file`)."""
        base = os.fspath(basename)
        properties = read_properties(base + ".properties")
        graph_class = properties.get("graphclass", "")
        if graph_class and not graph_class.endswith(".BVGraph"):
            raise ValueError(f"{base}: a {graph_class}, not a BVGraph")
        data = Path(base + ".graph").read_bytes()
        indptr, indices = decode_bv(data, properties)
        found = find_urls_file(base) if urls else None
        node_urls = list(read_urls(found)) if found else None
        if node_urls is not None and len(node_urls) != len(indptr) - 1:
            raise ValueError(f"{found} has {len(node_urls)} URLs for {len(indptr) - 1} nodes")
        return cls(indptr, indices, properties, node_urls)

    @property
    def nodes(self) -> int:
        return len(self.indptr) - 1

    @property
    def arcs(self) -> int:
        return len(self.indices)

    def successors(self, node: int) -> array.array[int]:
        """The successors of ``node``, increasing."""
        return self.indices[self.indptr[node] : self.indptr[node + 1]]

    def outdegree(self, node: int) -> int:
        return self.indptr[node + 1] - self.indptr[node]
