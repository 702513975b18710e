"""URL normalisation and link resolution: ours (crawl/urls/normalize.py) against w3lib and
url-normalize.

Microseconds per link (median of ``--runs`` runs, contenders interleaved in every run) on:

- ``synthweb``: every (page, href) of a synthetic web (seed 1, ``--hosts`` hosts) in page order,
  as link extraction resolves them: root-relative, relative, ``//host``, absolute, upper-case,
  ``:80``, fragments, junk (mailto:, javascript:, ``http://[bad`` ...);
- ``policy``: the same with the web's URL-policy profile on (links in other spellings: case,
  ``:80``, escapes, dot segments, session ids in the query and as ``;jsessionid=``, and traps);
- ``messy``: real-world link forms drawn at random (queries, escapes, session ids, IDN hosts,
  IP literals, whitespace, backslashes, dot segments, other schemes);
- ``absolute``: normalize() of URLs that are already canonical (seeds, the loop's URLs).

Ours is measured with its cache as in a crawl (cleared before each run, warmed by the run
itself) and without any cache. The libraries do not resolve links: they get
``urljoin(page, href)`` (after w3lib's ``strip_html5_whitespace``, or ``str.strip``). Then the
table of ``tests/unit/test_urls.py`` (expected form or error of each case) is run through every
contender: how many canonical forms each gets right, and how many errors it catches (raises or
returns None for).

Needs ``pip install w3lib url-normalize`` (for the comparison only).
Usage: ``python bench/url_normalize.py [--hosts 100] [--runs 7] [--baseline OLD_URLS_PY]``;
``--baseline`` adds another version of crawl/urls/normalize.py (e.g. ``git show
REV:crawl/urls/normalize.py``) as a contender, to measure a change.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from urllib.parse import urljoin

from crawl.urls import normalize as urls
from synthweb import SyntheticWeb, WebConfig

ROOT = Path(__file__).resolve().parent.parent

Resolver = Callable[[str, str], "str | None"]


def _quiet(function: Callable[..., str | None]) -> Callable[..., str | None]:
    """The function, with any exception (a rejected URL) as None."""

    def call(*args: str) -> str | None:
        try:
            return function(*args)
        except Exception:  # noqa: BLE001 - a rejection, whatever the library raises
            return None

    return call


def _load(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def contenders(baseline: str | None) -> dict[str, tuple[Resolver, Callable[[str], str | None],
                                                           Callable[[], None]]]:
    """name -> (resolve(page, href), normalize(url), reset caches)."""
    # This script's own name hides the url-normalize package while its directory is on the path.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    from url_normalize import url_normalize
    from w3lib.html import strip_html5_whitespace
    from w3lib.url import canonicalize_url, safe_url_string

    ours = urls.UrlNormalizer()
    ours_uncached = urls.UrlNormalizer(cache_size=0)

    def reset_ours() -> None:
        ours._canonical.cache_clear()  # type: ignore[attr-defined]
        ours._base.cache_clear()  # type: ignore[attr-defined]
        urls._authority.cache_clear()

    def no_reset() -> None:
        pass

    found: dict[str, tuple[Resolver, Callable[[str], str | None], Callable[[], None]]] = {
        "ours": (_quiet(ours.resolve), _quiet(ours.normalize), reset_ours),
        "ours, no cache": (
            _quiet(ours_uncached.resolve),
            _quiet(ours_uncached.normalize),
            urls._authority.cache_clear,
        ),
    }
    if baseline:
        old = _load(baseline, "urls_baseline")
        uncached = _load(baseline, "urls_baseline_uncached")
        uncached._normalize = uncached._normalize.__wrapped__
        found["baseline"] = (_quiet(old.resolve), _quiet(old.normalize), old._normalize.cache_clear)
        found["baseline, no cache"] = (
            _quiet(uncached.resolve), _quiet(uncached.normalize), no_reset
        )
    found["w3lib canonicalize_url"] = (
        _quiet(lambda page, href: canonicalize_url(urljoin(page, strip_html5_whitespace(href)))),
        _quiet(canonicalize_url),
        no_reset,
    )
    found["w3lib safe_url_string"] = (
        _quiet(lambda page, href: safe_url_string(urljoin(page, strip_html5_whitespace(href)))),
        _quiet(safe_url_string),
        no_reset,
    )
    found["url-normalize"] = (
        _quiet(lambda page, href: url_normalize(urljoin(page, href.strip()))),
        _quiet(url_normalize),
        no_reset,
    )
    return found


def synthweb_links(hosts: int, policy: bool = False) -> list[tuple[str, str]]:
    config = WebConfig(seed=1, hosts=hosts)
    web = SyntheticWeb(config.with_url_policy_profile() if policy else config)
    return [
        (page.url, link.href)
        for host in web.host_names()
        for page in web.pages(host)
        for link in page.links
    ]


_MESSY = [
    "/search?q={word}&page={n}",
    "/search?page={n}&q={word}&utm_source=news",
    "/article/{n}?PHPSESSID={hex}",
    "/shop/item;jsessionid={hex}?id={n}",
    "/a/b/../c/{n}.html",
    "./{word}/{n}",
    "../{word}/index.html",
    "?page={n}",
    "#section-{n}",
    "https://Example.COM:443/{word}#top",
    "HTTP://WWW.EXAMPLE.ORG/{word}/{n}",
    "//cdn.example.net/img/{n}.png",
    "  /p/{n}\n",
    "/caf%c3%a9/{n}",
    "/caf\u00e9/{word}",
    "/%7Euser/{n}/",
    "/a b/{word}",
    "http://b\u00fccher.example/{n}",
    "http://[2001:DB8::{n}]/x",
    "http://192.168.0.{n}:8080/",
    "\\\\host{n}.example\\x",
    "mailto:{word}@example.com",
    "javascript:void(0)",
    "tel:+1555{n}",
    "",
    "http://example.com/{word}?a=1&b=2&c={n}",
    "/wiki/Special:Search?search={word}&go=Go",
]
_WORDS = ["alpha", "news", "r\u00e9sum\u00e9", "a+b", "x%20y", "Page", "index", "data.json"]


def messy_links(count: int) -> list[tuple[str, str]]:
    rng = random.Random(1)
    pages = [f"http://site{i}.example/dir/page{i}.html?x={i}" for i in range(20)]
    return [
        (
            rng.choice(pages),
            rng.choice(_MESSY).format(
                word=rng.choice(_WORDS), n=rng.randrange(1000), hex=f"{rng.getrandbits(64):016X}"
            ),
        )
        for _ in range(count)
    ]


def measure(
    found: dict[str, tuple[Resolver, Callable[[str], str | None], Callable[[], None]]],
    links: tuple[list[tuple[str, str]], ...],
    absolute: list[str],
    runs: int,
) -> dict[tuple[str, str], float]:
    workloads = {"synthweb": links[0], "policy": links[1], "messy": links[2]}
    timings: dict[tuple[str, str], list[float]] = {}
    for resolve, normalize, _ in found.values():  # warm-up: imports, tables, lazy compilation
        for page, href in links[2]:
            resolve(page, href)
        for url in absolute[:100]:
            normalize(url)
    for _ in range(runs):
        for name, (resolve, normalize, reset) in found.items():
            for workload, pairs in workloads.items():
                reset()
                started = time.perf_counter()
                for page, href in pairs:
                    resolve(page, href)
                elapsed = time.perf_counter() - started
                timings.setdefault((name, workload), []).append(elapsed / len(pairs) * 1e6)
            reset()
            started = time.perf_counter()
            for url in absolute:
                normalize(url)
            elapsed = time.perf_counter() - started
            timings.setdefault((name, "absolute"), []).append(elapsed / len(absolute) * 1e6)
    return {key: statistics.median(values) for key, values in timings.items()}


def table_agreement(
    found: dict[str, tuple[Resolver, Callable[[str], str | None], Callable[[], None]]],
    show: bool,
) -> dict[str, tuple[int, int]]:
    """Per contender: (canonical forms right, errors caught) on the table of the unit tests.

    Any exception or None counts as catching an error, whatever the reason.
    """
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    table = importlib.import_module("tests.unit.test_urls").TABLE
    agreement = {}
    for name, (resolve, normalize, _) in found.items():
        forms = errors = 0
        for _rule, base, text, expected in table:
            got = normalize(text) if base is None else resolve(base, text)
            if expected.startswith("url:"):
                errors += got is None
            elif got == expected:
                forms += 1
            elif show and not name.startswith("ours"):
                print(f"  {name}: {_short(base)} {_short(text)} -> {_short(got)}, "
                      f"table: {_short(expected)}")
        agreement[name] = (forms, errors)
    rejections = sum(expected.startswith("url:") for _, _, _, expected in table)
    agreement["(cases)"] = (len(table) - rejections, rejections)
    return agreement


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--messy", type=int, default=5000)
    parser.add_argument("--baseline", help="another crawl/urls/normalize.py to measure against")
    parser.add_argument("--show", action="store_true", help="print the libraries' disagreements")
    args = parser.parse_args()
    links = synthweb_links(args.hosts)
    policy = synthweb_links(args.hosts, policy=True)
    messy = messy_links(args.messy)
    absolute = sorted({urls.resolve(page, href) for page, href in links if _ok(page, href)})
    found = contenders(args.baseline)
    agreement = table_agreement(found, args.show)
    figures = measure(found, (links, policy, messy), absolute, args.runs)
    print(
        f"links: synthweb {len(links)}, policy {len(policy)}, messy {len(messy)}, "
        f"absolute {len(absolute)} canonical URLs; median of {args.runs} runs, us per URL"
    )
    forms, errors = agreement["(cases)"]
    print(f"| contender | synthweb | policy | messy | absolute | forms right (of {forms}) "
          f"| errors caught (of {errors}) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in found:
        row = [figures[(name, w)] for w in ("synthweb", "policy", "messy", "absolute")]
        cells = " | ".join(f"{value:.2f}" for value in row)
        print(f"| {name} | {cells} | {agreement[name][0]} | {agreement[name][1]} |")


def _short(text: str | None) -> str:
    return repr(text) if text is None or len(text) < 70 else repr(text[:60]) + f"...({len(text)})"


def _ok(page: str, href: str) -> bool:
    try:
        urls.resolve(page, href)
    except urls.UrlError:
        return False
    return True


if __name__ == "__main__":
    main()
