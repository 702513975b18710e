"""zlib against zlib-ng where the crawler checksums, compresses and inflates.

Side by side in rounds (zlib, zlib-ng, zlib, zlib-ng ...), one thread, CPU time:

- ``crc32``: the DRUM's checksums (zlib's CRC-32; both libraries give the same value), over
  4 KiB payload pages and 1 MiB run blocks, in GB/s;
- ``gzip``: a WARC response record (the page behind an HTTP head) as one gzip member at level
  6, as the WARC writer makes each record, in microseconds a page, and the bytes written;
- ``inflate``: a page sent with ``Content-Encoding: gzip``, inflated as the HTTP client's body
  decoder does, in microseconds a page.

Pages: every ``.html`` file under ``--html DIR`` (real pages: any documentation tree), else
pages of 50 KB made of the synthetic web's pages (``--hosts``) put end to end. Each library's
output is checked against the other's (the same CRC, the same bytes after inflating).
Usage: ``python bench/compression.py [--html DIR] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from zlib_ng import zlib_ng

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synthweb import SyntheticWeb, WebConfig  # noqa: E402

LIBRARIES = {"zlib": zlib, "zlib-ng": zlib_ng}
_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"


def html_pages(directory: Path | None, hosts: int, size: int = 50_000) -> list[bytes]:
    """The pages the figures are measured on (see the module docstring)."""
    if directory is not None:
        return [path.read_bytes() for path in sorted(directory.rglob("*.html"))]
    web = SyntheticWeb(WebConfig(seed=1, hosts=hosts).with_near_duplicate_profile())
    bodies = []
    for host in web.host_names():
        for page in web.pages(host):
            if page.status == 200 and page.content_type.startswith("text/html"):
                bodies.append(web.respond(host, page.url.split(host, 1)[1] or "/").body)
    pages, current = [], b""
    for body in bodies:
        current += body
        if len(current) >= size:
            pages.append(current)
            current = b""
    return pages


def _cpu(function: Callable[[], object], repeat: int) -> float:
    began = time.thread_time()
    for _ in range(repeat):
        function()
    return (time.thread_time() - began) / repeat


def crc_gb_per_s(library, block: int, total: int = 256 * 2**20) -> float:
    data = os.urandom(block)
    repeat = max(1, total // block)
    return block / _cpu(lambda: library.crc32(data), repeat) / 1e9


def gzip_member(library, data: bytes, level: int = 6) -> bytes:
    compressor = library.compressobj(level, library.DEFLATED, 16 + library.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def inflate(library, data: bytes) -> bytes:
    inflater = library.decompressobj(16 + library.MAX_WBITS)
    return inflater.decompress(data) + inflater.flush()


def one_round(library, records: list[bytes], gzipped: list[bytes]) -> dict[str, float]:
    began = time.thread_time()
    written = sum(len(gzip_member(library, record)) for record in records)
    gzip_us = (time.thread_time() - began) / len(records) * 1e6
    began = time.thread_time()
    for member in gzipped:
        inflate(library, member)
    inflate_us = (time.thread_time() - began) / len(gzipped) * 1e6
    return {
        "crc32 4 KiB GB/s": crc_gb_per_s(library, 4096),
        "crc32 1 MiB GB/s": crc_gb_per_s(library, 2**20),
        "gzip us/page": gzip_us,
        "gzip bytes/page": written / len(records),
        "inflate us/page": inflate_us,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, help="measure on the .html files under this")
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    pages = html_pages(args.html, args.hosts)
    if not pages:
        parser.error("no pages to measure on")
    records = [_HEAD + page for page in pages]
    gzipped = [gzip_member(zlib, page) for page in pages]
    for page, member in zip(pages, gzipped, strict=True):
        if inflate(zlib_ng, member) != page or inflate(zlib, gzip_member(zlib_ng, page)) != page:
            raise SystemExit("zlib and zlib-ng disagree on a page")
        if zlib.crc32(page) != zlib_ng.crc32(page):
            raise SystemExit("zlib and zlib-ng give another CRC-32")
    sizes = sorted(len(page) for page in pages)
    print(f"{len(pages)} pages, median {sizes[len(sizes) // 2]:,} bytes "
          f"({sizes[0]:,} to {sizes[-1]:,}); zlib {zlib.ZLIB_RUNTIME_VERSION}, "
          f"zlib-ng {zlib_ng.ZLIBNG_VERSION}")
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in LIBRARIES}
    for _ in range(args.rounds):
        for name, library in LIBRARIES.items():
            rounds[name].append(one_round(library, records, gzipped))
    figures = list(rounds["zlib"][0])
    print("| figure | zlib | zlib-ng | zlib-ng / zlib (median of the rounds' ratios) |")
    print("|---|---:|---:|---:|")
    for figure in figures:
        medians = {name: statistics.median(r[figure] for r in rounds[name]) for name in LIBRARIES}
        ratio = statistics.median(
            ng[figure] / old[figure] for old, ng in zip(rounds["zlib"], rounds["zlib-ng"],
                                                        strict=True))
        print(f"| {figure} | {medians['zlib']:,.2f} | {medians['zlib-ng']:,.2f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
