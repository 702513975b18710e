"""A writer of WebGraph's BV format (the Java library's compression) for the tests of the
reader (``synthweb/bvgraph.py``): small graphs encoded with every code and option the reader
must decode."""

from __future__ import annotations

__all__ = ["encode", "runs"]


class _BitWriter:
    """Instantaneous codes, most significant bit first."""

    def __init__(self, zeta_k: int = 3) -> None:
        self.bits: list[int] = []
        self.k = zeta_k

    def fixed(self, value: int, width: int) -> None:
        self.bits += [(value >> (width - 1 - i)) & 1 for i in range(width)]

    def unary(self, x: int) -> None:
        self.bits += [0] * x + [1]

    def gamma(self, x: int) -> None:
        x += 1
        msb = x.bit_length() - 1
        self.unary(msb)
        self.fixed(x - (1 << msb), msb)

    def delta(self, x: int) -> None:
        x += 1
        msb = x.bit_length() - 1
        self.gamma(msb)
        self.fixed(x - (1 << msb), msb)

    def zeta(self, x: int) -> None:
        x += 1
        h = (x.bit_length() - 1) // self.k
        self.unary(h)
        left = 1 << (h * self.k)
        m = x - left
        if m < left:
            self.fixed(m, h * self.k + self.k - 1)
        else:
            self.fixed(m + left, h * self.k + self.k)

    def write(self, code: str, x: int) -> None:
        {"GAMMA": self.gamma, "DELTA": self.delta, "ZETA": self.zeta, "UNARY": self.unary}[code](x)

    def to_bytes(self) -> bytes:
        bits = self.bits + [0] * (-len(self.bits) % 8)
        return bytes(
            int("".join(map(str, bits[i : i + 8])), 2) for i in range(0, len(bits), 8)
        )


def _int2nat(x: int) -> int:
    return 2 * x if x >= 0 else -2 * x - 1


def runs(values: list[int], min_interval: int) -> tuple[list[tuple[int, int]], list[int]]:
    """The maximal runs of consecutive values at least ``min_interval`` long, and the rest."""
    intervals, rest = [], []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        if min_interval and j - i + 1 >= min_interval:
            intervals.append((values[i], j - i + 1))
        else:
            rest += values[i : j + 1]
        i = j + 1
    return intervals, rest


def encode(
    lists: list[list[int]],
    *,
    window: int = 7,
    min_interval: int = 4,
    zeta_k: int = 3,
    codes: dict[str, str] | None = None,
    flags: str = "",
) -> tuple[bytes, dict[str, str]]:
    """``lists`` (increasing successor lists) as a BV graph file and its properties. Each node
    refers to the node in its window it shares most successors with (none if it shares none)."""
    code = {"OUTDEGREES": "GAMMA", "REFERENCES": "UNARY", "BLOCKS": "GAMMA",
            "BLOCK_COUNT": "GAMMA", "RESIDUALS": "ZETA", **(codes or {})}
    out = _BitWriter(zeta_k)
    for x, successors in enumerate(lists):
        out.write(code["OUTDEGREES"], len(successors))
        if not successors:
            continue
        wanted = set(successors)
        copied: list[int] = []
        if window:
            candidates = range(1, min(window, x) + 1)
            ref = max(candidates, key=lambda r: len(wanted & set(lists[x - r])), default=0)
            if ref and not wanted & set(lists[x - ref]):
                ref = 0
            out.write(code["REFERENCES"], ref)
            if ref:
                source = lists[x - ref]
                mask = [y in wanted for y in source]
                blocks, copying, length = [], True, 0
                for keep in mask:
                    if keep == copying:
                        length += 1
                    else:
                        blocks.append(length)
                        copying, length = not copying, 1
                blocks.append(length)
                blocks.pop()  # the last run is implied by the parity of the block count
                out.write(code["BLOCK_COUNT"], len(blocks))
                for i, block in enumerate(blocks):
                    out.write(code["BLOCKS"], block - (1 if i else 0))
                copied = [y for y, keep in zip(source, mask, strict=True) if keep]
        extras = sorted(wanted - set(copied))
        residuals = extras
        if extras and min_interval:
            intervals, residuals = runs(extras, min_interval)
            out.gamma(len(intervals))
            previous = None
            for left, length in intervals:
                out.gamma(_int2nat(left - x) if previous is None else left - previous - 1)
                out.gamma(length - min_interval)
                previous = left + length
        previous = None
        for value in residuals:
            out.write(code["RESIDUALS"],
                      _int2nat(value - x) if previous is None else value - previous - 1)
            previous = value
    properties = {
        "graphclass": "it.unimi.dsi.webgraph.BVGraph", "version": "0",
        "nodes": str(len(lists)), "arcs": str(sum(map(len, lists))),
        "windowsize": str(window), "minintervallength": str(min_interval),
        "zetak": str(zeta_k), "compressionflags": flags,
    }
    return out.to_bytes(), properties
