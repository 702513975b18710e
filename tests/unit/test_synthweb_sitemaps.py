"""The sitemap profile of the synthetic web (synthweb/sitemaps.py): what it serves, read back
with the crawler's own sitemap parser and over real HTTP, the ground truth the model crawler
derives, the audit of a request log against it, and the web left as it was with the profile off.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import http.client
import inspect
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from protego import Protego

from crawl.config import SitemapsSection
from crawl.content.sitemaps import parse_sitemap, sitemaps_in_robots
from synthweb import (
    ExpectedCrawl,
    SitemapTruth,
    SyntheticWeb,
    SyntheticWebServer,
    WebConfig,
    audit_log,
)
from synthweb import sitemaps as sitemap_web
from synthweb.requestlog import RequestRecord
from synthweb.urls import split_url
from tests.fakes.synthweb import web_digest

TOKEN = "pyflink-crawler"
PACKAGE = Path(__file__).resolve().parents[2] / "synthweb"
WEB = SyntheticWeb(WebConfig(seed=7, hosts=6).with_sitemap_profile())
EXPECTED = WEB.expected_crawl(WEB.seeds())
# Larger: two normal hosts name sitemaps, one of them in both formats.
SMALL = WebConfig(seed=7, hosts=12, pages_per_host=8, crawl_delays=(0.1,))
WIDE = SyntheticWeb(SMALL.with_sitemap_profile())
WIDE_EXPECTED = WIDE.expected_crawl(WIDE.seeds())
A, B, C = (f"http://{host}" for host in sitemap_web.SITEMAP_HOSTS)
NS = f"{{{sitemap_web.NAMESPACE}}}"


def _truth(expected: ExpectedCrawl) -> SitemapTruth:
    truth = expected.sitemaps
    assert truth is not None
    return truth


def _documents(web: SyntheticWeb) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every sitemap document of ``web``: the sm-* hosts' and the normal hosts'."""
    found = dict(sitemap_web.DOCUMENTS)
    for host in web.sitemap_host_names():
        for url in web.robots_sitemaps(host):
            document = web.sitemap_document(url)
            if document is not None:
                found[url] = document
    return found


def _normal_naming_hosts(web: SyntheticWeb) -> list[str]:
    return [h for h in web.sitemap_host_names() if not sitemap_web.is_sitemap_host(h)]


def _added(web: SyntheticWeb, url: str) -> bool:
    """Whether the profile adds ``url``: on an sm-* host, or a path it adds to a normal host."""
    host, path = split_url(url)
    if sitemap_web.is_sitemap_host(host):
        return True
    return url in _documents(web) or path.startswith("/orphan/")


# -- robots.txt ------------------------------------------------------------------------------


def test_robots_txt_names_the_sitemaps_the_model_expects() -> None:
    response = WEB.respond(sitemap_web.HOST_A, "/robots.txt")
    urls, _ = sitemaps_in_robots(response.body, f"http://{sitemap_web.HOST_A}/robots.txt", 50)
    assert tuple(urls) == sitemap_web.robots_sitemaps(sitemap_web.HOST_A)
    assert len(urls) == 4
    # One relative and in odd case, resolved against the robots.txt URL.
    assert b"\nsitemap: /sitemap-index.xml\n" in response.body
    assert f"{A}/sitemap-index.xml" in urls


@pytest.mark.parametrize("host", _normal_naming_hosts(WIDE))
def test_a_normal_host_names_its_sitemaps_and_keeps_its_rules(host: str) -> None:
    body = WIDE.respond(host, "/robots.txt").body
    plain = SyntheticWeb(SMALL)
    assert body.startswith(plain.respond(host, "/robots.txt").body + b"\n")
    urls, _ = sitemaps_in_robots(body, f"http://{host}/robots.txt", 50)
    assert tuple(urls) == WIDE.robots_sitemaps(host)
    assert urls[0] == f"http://{host}/sitemap.xml"
    assert WIDE.robots_rules(host).groups == plain.robots_rules(host).groups
    # Protego (what the crawler uses) reads the same rules with the Sitemap: lines as without.
    rules = Protego.parse(body.decode())
    before = Protego.parse(plain.robots_rules(host).body.decode())
    for page in WIDE.pages(host):
        for agent in (TOKEN, "somebot"):
            path = split_url(page.url)[1]
            assert rules.can_fetch(page.url, agent) == before.can_fetch(page.url, agent)
            assert rules.can_fetch(page.url, agent) == WIDE.robots_rules(host).allowed(path, agent)


def test_about_half_the_hosts_with_rules_name_sitemaps() -> None:
    web = SyntheticWeb(WebConfig(seed=3, hosts=40).with_sitemap_profile())
    normal = _normal_naming_hosts(web)
    with_rules = [
        h for h in web.host_names()[1:]
        if web.robots_rules(h).kind.value in ("normal", "agent-group", "crawl-delay")
    ]
    assert set(normal) <= set(with_rules)
    assert len(normal) == round(len(with_rules) / 2)
    assert all(not web.robots_sitemaps(h) for h in web.host_names() if h not in normal)
    # Both formats appear, and every named sitemap of a normal host is on that host.
    named = [url for h in normal for url in web.robots_sitemaps(h)]
    assert {url.rsplit("/", 1)[1] for url in named} == {"sitemap.xml", "sitemap.txt"}
    assert all(split_url(url)[0] == h for h in normal for url in web.robots_sitemaps(h))


# -- what is served ----------------------------------------------------------------------------


@pytest.mark.parametrize("url", sorted(_documents(WIDE)))
def test_every_document_reads_back_as_what_it_lists(url: str) -> None:
    host, path = split_url(url)
    response = WIDE.respond(host, path, accept_gzip=True)
    assert response.status == 200
    assert not any(name == "Content-Encoding" for name, _ in response.headers)
    document = parse_sitemap(response.body, SitemapsSection())
    kind, listed = _documents(WIDE)[url]
    assert document.error == ""
    assert document.kind == {"gzip-urlset": "urlset"}.get(kind, kind)
    entries = document.sitemaps if kind == "index" else document.urls
    assert tuple(e.url for e in entries) == listed
    if kind == "gzip-urlset":
        assert response.body[:2] == b"\x1f\x8b"
        assert ("Content-Type", "application/x-gzip") in response.headers


def test_every_format_is_served() -> None:
    kinds = {kind for kind, _ in _documents(WIDE).values()}
    assert kinds == {"urlset", "gzip-urlset", "text", "index"}
    index = sitemap_web.DOCUMENTS[f"{A}/sitemap-index.xml"][1]
    # The index lists a plain urlset and the gzipped file (and a text sitemap, an index).
    assert {sitemap_web.DOCUMENTS[u][0] for u in index} == {"urlset", "gzip-urlset", "text",
                                                           "index"}
    assert f"{A}/sitemaps/part-2.xml.gz" in index


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyntheticWebServer]:
    log_path = tmp_path_factory.mktemp("sitemaps") / "requests.jsonl"
    with SyntheticWebServer(WIDE.config, log_path, flush_interval=0.1) as running:
        yield running


def _get(server: SyntheticWebServer, url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    host, _, port = server.proxy_url.removeprefix("http://").rpartition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", url, headers={"User-Agent": f"{TOKEN}/test", **headers})
        reply = connection.getresponse()
        return reply.status, dict(reply.getheaders()), reply.read()
    finally:
        connection.close()


def _locs(root: ET.Element, entry: str) -> list[str]:
    return [(e.findtext(f"{NS}loc") or "").strip() for e in root.findall(f"{NS}{entry}")]


def test_server_serves_a_urlset(server: SyntheticWebServer) -> None:
    status, headers, body = _get(server, f"{A}/sitemap.xml")
    assert (status, headers["Content-Type"]) == (200, "application/xml; charset=utf-8")
    assert body == WIDE.body(f"{A}/sitemap.xml")
    root = ET.fromstring(body)
    assert root.tag == f"{NS}urlset"
    assert _locs(root, "url") == list(sitemap_web.DOCUMENTS[f"{A}/sitemap.xml"][1])
    for url in root.findall(f"{NS}url"):
        assert {child.tag for child in url} == {
            f"{NS}{name}" for name in ("loc", "lastmod", "changefreq", "priority")
        }
    assert b"/orphan/2?from=sitemap&amp;kind=xml" in body


def test_server_serves_an_index(server: SyntheticWebServer) -> None:
    status, headers, body = _get(server, f"{A}/sitemap-index.xml")
    assert (status, headers["Content-Type"]) == (200, "application/xml; charset=utf-8")
    root = ET.fromstring(body)
    assert root.tag == f"{NS}sitemapindex"
    assert _locs(root, "sitemap") == list(sitemap_web.DOCUMENTS[f"{A}/sitemap-index.xml"][1])


def test_server_serves_the_gzip_file_as_is(server: SyntheticWebServer) -> None:
    # Even to a client that accepts gzip: the file is the body, not a Content-Encoding.
    status, headers, body = _get(server, f"{A}/sitemaps/part-2.xml.gz", **{
        "Accept-Encoding": "gzip"
    })
    assert (status, headers["Content-Type"]) == (200, "application/x-gzip")
    assert "Content-Encoding" not in headers
    assert int(headers["Content-Length"]) == len(body)
    root = ET.fromstring(gzip.decompress(body))
    assert root.tag == f"{NS}urlset"
    assert _locs(root, "url") == list(sitemap_web.DOCUMENTS[f"{A}/sitemaps/part-2.xml.gz"][1])


def test_server_serves_text_sitemaps(server: SyntheticWebServer) -> None:
    texts = [u for u, (kind, _) in _documents(WIDE).items() if kind == "text"]
    assert any(u.startswith("http://h") for u in texts)
    for url in texts:
        status, headers, body = _get(server, url)
        assert (status, headers["Content-Type"]) == (200, "text/plain; charset=utf-8")
        assert tuple(body.decode().splitlines()) == _documents(WIDE)[url][1]


def test_server_serves_a_normal_host_s_sitemap_robots_and_orphans(
    server: SyntheticWebServer,
) -> None:
    host = _normal_naming_hosts(WIDE)[0]
    status, headers, body = _get(server, f"http://{host}/robots.txt")
    assert status == 200
    assert f"\nSitemap: http://{host}/sitemap.xml\n".encode() in body
    status, headers, body = _get(server, f"http://{host}/sitemap.xml")
    assert (status, headers["Content-Type"]) == (200, "application/xml; charset=utf-8")
    listed = _locs(ET.fromstring(body), "url")
    assert listed[0] == f"http://{host}/"
    orphan = f"http://{host}/orphan/1"
    assert orphan in listed
    status, headers, body = _get(server, orphan)
    assert (status, headers["Content-Type"]) == (200, "text/html; charset=utf-8")
    assert f'href="http://{host}/"'.encode() in body
    assert _get(server, f"http://{host}/orphan/99")[0] == 404
    server.flush_log()
    logged = {(r.url, r.status) for r in server.request_log()}
    assert {(orphan, 200), (f"http://{host}/orphan/99", 404)} <= logged


# -- determinism ------------------------------------------------------------------------------


def _sitemap_digest(web: SyntheticWeb) -> str:
    """A fingerprint of what the sitemap profile serves and of its ground truth."""
    sha = hashlib.sha256()
    for host in web.sitemap_host_names():
        sha.update(web.respond(host, "/robots.txt").body)
        for page in web.pages(host):
            sha.update(repr(page).encode())
            sha.update(web.body(page.url))
    truth = web.expected_crawl(web.seeds()).sitemaps
    assert truth is not None
    parts = [sorted(truth.documents), sorted(truth.orphans), sorted(truth.refused)]
    sha.update(json.dumps(parts).encode())
    return sha.hexdigest()


def test_same_seed_same_sitemaps_in_another_process() -> None:
    config = WIDE.config
    assert _sitemap_digest(SyntheticWeb(config)) == _sitemap_digest(WIDE)
    code = "\n".join([
        "import hashlib, json",
        "from synthweb import SyntheticWeb, WebConfig",
        inspect.getsource(_sitemap_digest),
        f"print(_sitemap_digest(SyntheticWeb(WebConfig.from_json({config.to_json()!r}))))",
    ])
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONHASHSEED": "999", "PYTHONPATH": str(PACKAGE.parent)},
    )
    assert result.stdout.strip() == _sitemap_digest(WIDE)


def test_another_seed_picks_other_hosts() -> None:
    other = SyntheticWeb(dataclasses.replace(WIDE.config, seed=8))
    assert _normal_naming_hosts(other) != _normal_naming_hosts(WIDE)
    assert _sitemap_digest(other) != _sitemap_digest(WIDE)


# -- the ground truth -------------------------------------------------------------------------


def test_the_truth_follows_the_rules() -> None:
    truth = _truth(EXPECTED)
    on_sm_hosts = {u for u in truth.orphans if sitemap_web.is_sitemap_host(split_url(u)[0])}
    assert on_sm_hosts == {
        f"{A}/orphan/1", f"{A}/orphan/2?from=sitemap&kind=xml", f"{A}/orphan/3",
        f"{A}/orphan/4", f"{A}/orphan/5", f"{A}/orphan/6", f"{B}/orphan/1",
    }
    # Cross-host listings, the index nested too deep (and what only it lists), a sitemap
    # robots.txt disallows.
    assert truth.refused == {
        f"{C}/orphan/1", f"{C}/orphan/2", f"{A}/sitemaps/deep.xml", f"{A}/orphan/9",
        f"{A}/private/sitemap.xml",
    }
    assert truth.refused <= EXPECTED.never
    assert truth.documents | truth.orphans <= EXPECTED.fetch.keys()
    assert not EXPECTED.fetch.keys() & EXPECTED.never
    # Level 2 (robots.txt -> index -> index) is fetched; its child, level 3, is not.
    assert f"{A}/sitemaps/nested-index.xml" in truth.documents
    # Cross-submission: sm-a's robots.txt names a sitemap on sm-b listing sm-a's orphan.
    assert f"{B}/for-a.xml" in truth.documents
    assert f"{A}/orphan/5" in EXPECTED.fetch
    # A linked page listed twice is fetched once, as a page.
    assert EXPECTED.fetch[f"{A}/p/1"] == 200
    assert f"{A}/p/1" not in truth.orphans
    # Nothing but refused URLs leads to sm-c: the crawl never contacts it.
    assert sitemap_web.HOST_C not in EXPECTED.robots
    assert truth.hosts == {sitemap_web.HOST_A, *_normal_naming_hosts(WEB)}


def test_normal_hosts_orphans_are_reached_only_through_sitemaps() -> None:
    truth = _truth(WIDE_EXPECTED)
    hosts = _normal_naming_hosts(WIDE)
    assert len(hosts) == 2
    linked = {
        link.url
        for host in WIDE.host_names() + list(sitemap_web.SITEMAP_HOSTS)
        for page in WIDE.pages(host)
        for link in page.links
    }
    for host in hosts:
        named = WIDE.robots_sitemaps(host)
        assert set(named) <= truth.documents | WIDE_EXPECTED.never
        listed = {u for url in named for u in (WIDE.sitemap_document(url) or ("", ()))[1]}
        orphans = {u for u in listed if "/orphan/" in u}
        assert len(orphans) >= 2
        assert orphans <= truth.orphans
        assert not orphans & linked
        others = listed - orphans
        assert f"http://{host}/" in others
        assert not others & truth.orphans
        assert others <= WIDE_EXPECTED.fetch.keys() | WIDE_EXPECTED.never
    assert {u for u in truth.orphans if u.startswith("http://h")} == {
        f"http://{h}/orphan/{n}" for h in hosts for n in range(1, 5)
    } & WIDE_EXPECTED.fetch.keys()


def test_a_text_sitemap_robots_txt_disallows_is_refused() -> None:
    # seed 5: h3's robots.txt has Disallow: /*.txt$ and names its /sitemap.txt.
    web = SyntheticWeb(dataclasses.replace(SMALL, seed=5).with_sitemap_profile())
    expected = web.expected_crawl(web.seeds())
    url = "http://h3.synth.test/sitemap.txt"
    assert url in web.robots_sitemaps("h3.synth.test")
    assert not web.robots_rules("h3.synth.test").allowed("/sitemap.txt", TOKEN)
    assert url in _truth(expected).refused
    assert url in expected.never
    assert "http://h3.synth.test/sitemap.xml" in expected.fetch


def test_at_most_max_per_robots_sitemaps_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sitemap_web, "MAX_PER_ROBOTS", 1)
    expected = WEB.expected_crawl(WEB.seeds())
    # Only sm-a's first Sitemap: line counts: the index and the cross-submitted sitemap are
    # never named, so neither they nor what only they list are reached.
    assert f"{A}/sitemap.xml" in expected.fetch
    for url in (f"{A}/sitemap-index.xml", f"{B}/for-a.xml", f"{A}/orphan/3", f"{A}/orphan/5"):
        assert url not in expected.fetch
        assert url not in expected.never


def test_the_truth_with_every_profile_on() -> None:
    config = SMALL.with_hostile_profile().with_url_policy_profile(
        farm_hosts=2, farm_pages_per_host=5
    ).with_sitemap_profile()
    web = SyntheticWeb(config)
    expected = web.expected_crawl(web.seeds())
    truth = _truth(expected)
    assert not expected.fetch.keys() & expected.never
    assert truth.documents | truth.orphans <= expected.fetch.keys()
    assert truth.refused <= expected.never
    assert {u for u in truth.orphans if u.startswith("http://h")}


# -- off by default ---------------------------------------------------------------------------


def test_off_by_default() -> None:
    config = WebConfig()
    assert (config.sitemaps, config.sitemap_host_share) == (False, 0.0)
    plain = SyntheticWeb(dataclasses.replace(SMALL, sitemap_host_share=1.0))  # share alone: off
    assert plain.expected_crawl(plain.seeds()).sitemaps is None
    assert not plain.is_host(sitemap_web.HOST_A)
    assert plain.sitemap_host_names() == []
    assert all(not plain.robots_sitemaps(h) for h in plain.host_names())
    assert plain.sitemap_document(f"http://{plain.host_names()[1]}/sitemap.xml") is None
    assert plain.status(f"http://{plain.host_names()[1]}/orphan/1") == 404
    assert web_digest(plain) == web_digest(SyntheticWeb(SMALL))


def test_the_profile_changes_nothing_else() -> None:
    plain = SyntheticWeb(SMALL)
    expected = plain.expected_crawl(plain.seeds())
    for host in plain.host_names():
        before = plain.pages(host)
        after = [p for p in WIDE.pages(host) if not _added(WIDE, p.url)]
        if host == "h0.synth.test":  # the showcase home page links to sm-a too
            entry = after[0].links[-1]
            assert entry.url == sitemap_web.ENTRY_URL
            after[0] = dataclasses.replace(after[0], links=after[0].links[:-1])
        assert after == before
        for page in before[1:]:
            assert WIDE.body(page.url) == plain.body(page.url)
    assert {u: s for u, s in WIDE_EXPECTED.fetch.items() if not _added(WIDE, u)} == expected.fetch
    assert {u for u in WIDE_EXPECTED.never if not _added(WIDE, u)} == expected.never
    robots = WIDE_EXPECTED.robots.items()
    assert {h: s for h, s in robots if not sitemap_web.is_sitemap_host(h)} == expected.robots
    assert WIDE_EXPECTED.crawl_delays == expected.crawl_delays


def test_profile_options() -> None:
    assert WIDE.config.sitemaps
    assert WIDE.config.sitemap_host_share == 0.5
    none = SyntheticWeb(SMALL.with_sitemap_profile(sitemap_host_share=0.0))
    assert none.sitemap_host_names() == [sitemap_web.HOST_A]
    every = SyntheticWeb(SMALL.with_sitemap_profile(sitemap_host_share=1.0))
    assert len(_normal_naming_hosts(every)) > len(_normal_naming_hosts(WIDE))
    assert WebConfig.from_json(WIDE.config.to_json()) == WIDE.config
    with pytest.raises(ValueError, match="sitemap_host_share"):
        SMALL.with_sitemap_profile(sitemap_host_share=1.5)


# -- the audit --------------------------------------------------------------------------------


def _log(
    expected: ExpectedCrawl, extra: tuple[str, ...] = (), skip: str = ""
) -> list[RequestRecord]:
    """A request log that follows the rules: every robots.txt first, then every URL to fetch
    (but ``skip``) once, a second apart (more than any Crawl-delay here); then ``extra``."""
    urls = [expected.robots_url(host) for host in expected.robots]
    urls += [u for u in expected.fetch if u != skip] + list(extra)
    records = []
    for n, url in enumerate(urls):
        host, path = split_url(url)
        status = expected.fetch.get(url, 200)
        if path == "/robots.txt":
            status = expected.robots[host]
        records.append(RequestRecord(start=float(n), end=n + 0.001, host=host, path=path,
                                     method="GET", status=status, bytes=1, ua=f"{TOKEN}/0.1"))
    return records


@pytest.mark.parametrize("expected", [EXPECTED, WIDE_EXPECTED], ids=["web", "wide"])
def test_the_audit_accepts_a_crawl_that_follows_the_rules(expected: ExpectedCrawl) -> None:
    assert audit_log(_log(expected), expected) == []


@pytest.mark.parametrize(
    "refused",
    [
        f"{C}/orphan/1",  # another host's page listed by sm-a's sitemap
        f"{C}/orphan/2",  # ... and by the sitemap on sm-b that sm-a's robots.txt names
        f"{A}/sitemaps/deep.xml",  # nested too deep
        f"{A}/orphan/9",  # listed only by it
        f"{A}/private/sitemap.xml",  # named by robots.txt, disallowed by it
    ],
)
def test_the_audit_flags_a_refused_url(refused: str) -> None:
    problems = audit_log(_log(EXPECTED, (refused,)), EXPECTED)
    assert problems[0] == f"{refused}: requested but disallowed (robots.txt or 5xx robots.txt)"


def test_the_audit_flags_a_missed_orphan_and_a_sitemap_fetched_twice() -> None:
    orphan = min(u for u in _truth(WIDE_EXPECTED).orphans if u.startswith("http://h"))
    assert audit_log(_log(WIDE_EXPECTED, skip=orphan), WIDE_EXPECTED) == [
        f"{orphan}: never requested"
    ]
    sitemap = f"{A}/sitemaps/part-2.xml.gz"
    assert audit_log(_log(WIDE_EXPECTED, (sitemap,)), WIDE_EXPECTED) == [
        f"{sitemap}: requested 2 times"
    ]
