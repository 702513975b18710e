"""Link extraction cost: Beautiful Soup (over lxml, whole tree or strained to links) vs lxml.

Measures microseconds per page on every 200 HTML page of a synthetic web (small pages) and on a
generated 71 KB page with 300 links (closer to real pages), best of ``--runs`` medians.
Usage: ``python bench/parse_links.py [--hosts 60] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import lxml.html
from bs4 import BeautifulSoup, SoupStrainer

from crawl.content.links import extract_links
from crawl.model import FetchResult
from crawl.status import Status
from synthweb import SyntheticWeb, WebConfig

_STRAINER = SoupStrainer(["a", "area", "base"])


def bs4_whole_tree(body: bytes) -> list[str]:
    soup = BeautifulSoup(body, "lxml")
    return [str(tag["href"]) for tag in soup.find_all(["a", "area"], href=True)]


def bs4_strained(body: bytes) -> list[str]:
    soup = BeautifulSoup(body, "lxml", parse_only=_STRAINER)
    return [str(tag["href"]) for tag in soup.find_all(["a", "area"], href=True)]


def lxml_xpath(body: bytes) -> list[str]:
    return [str(h) for h in lxml.html.document_fromstring(body).xpath("//a/@href|//area/@href")]


def crawler_extract_links(body: bytes) -> list[str]:
    """What the crawler runs: lxml plus resolution and normalisation of every link."""
    result = FetchResult(url="http://bench.test/dir/page", status=Status.FETCHED, reason="",
                         http_status=200, response_headers=[("Content-Type", "text/html")],
                         body=body)
    return extract_links(result).urls


def _big_page() -> bytes:
    rng = random.Random(1)
    parts = ["<html><head><title>t</title><meta charset=utf-8><script>var x=1;</script>"
             "</head><body>"]
    for i in range(300):
        parts.append(f"<div class='c{i}'><p>Lorem ipsum {i} " + "consectetur adipiscing elit " * 5
                     + f"<a href='/p/{rng.randint(0, 9999)}?q={i}'>link {i}</a></p></div>")
    parts.append("</body></html>")
    return "".join(parts).encode()


def _per_page_us(function: Callable[[bytes], list[str]], bodies: list[bytes], runs: int) -> float:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        for body in bodies:
            function(body)
        timings.append((time.perf_counter() - started) / len(bodies) * 1e6)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=60)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    web = SyntheticWeb(WebConfig(seed=1, hosts=args.hosts))
    small = [
        web.respond(host, page.url.split(host, 1)[1]).body
        for host in web.host_names()
        for page in web.pages(host)
        if page.status == 200 and page.content_type.startswith("text/html")
    ]
    big = [_big_page()] * 20
    print(f"{len(small)} synthetic pages (mean {sum(map(len, small)) // len(small)} bytes); "
          f"big page {len(big[0])} bytes")
    print(f"{'extractor':<24} {'small us/page':>14} {'big us/page':>12}")
    for function in (bs4_whole_tree, bs4_strained, lxml_xpath, crawler_extract_links):
        print(f"{function.__name__:<24} {_per_page_us(function, small, args.runs):>14.0f} "
              f"{_per_page_us(function, big, args.runs):>12.0f}")


if __name__ == "__main__":
    main()
