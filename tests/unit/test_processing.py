"""The process stage's work (crawl.processing): WARC, crawl log and loop lines per outcome."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from crawl.archive.crawl_log import CrawlLogWriter, parse_line
from crawl.archive.warc import WarcFileWriter, verify_warc_file
from crawl.config import ScopeSection, SitemapsSection
from crawl.content.links import LinkExtractor
from crawl.content.soft404 import not_found_print
from crawl.loop.records import decode_line, parse_payload, parse_record
from crawl.model import FetchResult
from crawl.processing import PageProcessor, RecentUrls, payload_key
from crawl.progress import StageStatus
from crawl.stages import PROCESS_LINKS_HELD_CASH, PROCESS_LINKS_RECENT, PROCESS_WARC_REVISITS
from crawl.status import Status
from crawl.urls.normalize import vnode_of
from crawl.urls.scope import UrlPolicy

VNODES = 256
PAGE = "http://a.test/dir/page"
HTML = b"""<html><head><title>t</title></head><body>
<a href="other">same host</a> <a href="/dir/page#top">self</a>
<a href="http://B.TEST:80/x">other host</a> <a href="mailto:me@a.test">mail</a>
<a href="http://[bad">broken</a> <area href="/map"></body></html>"""


@pytest.fixture
def processor(tmp_path: Path) -> Iterator[tuple[PageProcessor, Path]]:
    warc = WarcFileWriter(tmp_path / "warc", "test", 0)
    log = CrawlLogWriter(tmp_path / "crawl.log", background_flush=False)
    status = StageStatus(tmp_path / "status", "process", 0, interval=60)
    yield PageProcessor(warc, log, VNODES, status, producer_id="0.test", recent_urls=0), tmp_path
    warc.close()
    log.close()
    status.close()


@pytest.fixture
def make_processor(tmp_path: Path) -> Iterator[Callable[..., tuple[PageProcessor, StageStatus]]]:
    """Builds processors writing under ``tmp_path`` (options as PageProcessor's, without the
    cache of recent URLs unless given: a test sees every link it sends); closes their files
    at the end."""
    opened: list[tuple[WarcFileWriter, CrawlLogWriter, StageStatus]] = []

    def build(**options: object) -> tuple[PageProcessor, StageStatus]:
        warc = WarcFileWriter(tmp_path / "warc", "test", 0)
        log = CrawlLogWriter(tmp_path / "crawl.log", background_flush=False)
        status = StageStatus(tmp_path / "status", "process", 0, interval=60)
        opened.append((warc, log, status))
        options.setdefault("recent_urls", 0)
        return PageProcessor(warc, log, VNODES, status, producer_id="0.f", **options), status

    yield build
    for warc, log, status in opened:
        warc.close()
        log.close()
        status.close()


def _lines_by_vnode(lines: list[str]) -> dict[int, tuple[list, list]]:
    decoded = {}
    for line in lines:
        vnode, payload = decode_line(line)
        decoded[vnode] = parse_payload(payload)
    return decoded


def _html_result() -> FetchResult:
    return FetchResult(
        url=PAGE, status=Status.FETCHED, reason="", http_status=200, http_reason="OK",
        request_headers=[("Host", "a.test"), ("User-Agent", "pyflink-crawler/0.1")],
        response_headers=[("Content-Type", "text/html; charset=utf-8")],
        body=HTML, started_ms=1_700_000_000_000, duration_ms=12, hops="L", via="http://a.test/",
    )


def test_html_page_is_archived_logged_and_its_links_routed(
    processor: tuple[PageProcessor, Path],
) -> None:
    page_processor, folder = processor
    lines = page_processor.process(_html_result())
    by_vnode = _lines_by_vnode(lines)
    own = vnode_of("a.test", VNODES)
    other = vnode_of("b.test", VNODES)
    found_here, done_here = by_vnode[own]
    assert [url for url, _, _ in found_here] == ["http://a.test/dir/other", "http://a.test/map"]
    assert all(hops == "LL" and via == PAGE for _, hops, via in found_here)
    assert done_here == [(PAGE, "FETCHED", 200, "", 1_700_000_000_000)]
    found_there, done_there = by_vnode[other]
    assert found_there == [("http://b.test/x", "LL", PAGE)]
    assert done_there == []

    page_processor._warc.close()
    records = [r for path in (folder / "warc").glob("*.warc.gz") for r in verify_warc_file(path)]
    assert ("response", PAGE) in records
    assert ("request", PAGE) in records
    page_processor._log.flush()
    entry = parse_line((folder / "crawl.log").read_text().splitlines()[0])
    assert entry["url"] == PAGE
    assert entry["http_status"] == 200
    assert entry["payload_digest"].startswith("sha1:")


def test_redirect_routes_its_target(processor: tuple[PageProcessor, Path]) -> None:
    page_processor, _ = processor
    result = FetchResult(
        url=PAGE, status=Status.REDIRECT, reason="http:301", http_status=301,
        response_headers=[("Location", "/moved")], started_ms=1, hops="", via="",
    )
    by_vnode = _lines_by_vnode(page_processor.process(result))
    found, done = by_vnode[vnode_of("a.test", VNODES)]
    assert found == [("http://a.test/moved", "R", PAGE)]
    assert done[0][1] == "REDIRECT"


def test_redirect_to_itself_is_not_routed(processor: tuple[PageProcessor, Path]) -> None:
    page_processor, _ = processor
    result = FetchResult(url=PAGE, status=Status.REDIRECT, reason="http:302", http_status=302,
                         response_headers=[("Location", PAGE + "#x")], started_ms=1)
    (found, _done), = _lines_by_vnode(page_processor.process(result)).values()
    assert found == []


def test_robots_fetch_is_archived_but_not_routed(processor: tuple[PageProcessor, Path]) -> None:
    page_processor, folder = processor
    result = FetchResult(url="http://a.test/robots.txt", status=Status.FETCHED, reason="",
                         http_status=200, body=b"User-agent: *\n", started_ms=1, hops="P")
    assert page_processor.process(result) == []
    page_processor._warc.close()
    records = [r for path in (folder / "warc").glob("*.warc.gz") for r in verify_warc_file(path)]
    assert ("response", "http://a.test/robots.txt") in records


@pytest.mark.parametrize(
    ("status", "reason"),
    [(Status.ROBOTS_DENIED, "robots:disallow"), (Status.FETCH_ERROR, "timeout:read")],
)
def test_outcomes_without_response_are_logged_and_reported(
    processor: tuple[PageProcessor, Path], status: Status, reason: str
) -> None:
    page_processor, folder = processor
    result = FetchResult(url=PAGE, status=status, reason=reason, started_ms=5, hops="L")
    by_vnode = _lines_by_vnode(page_processor.process(result))
    assert by_vnode == {vnode_of("a.test", VNODES): ([], [(PAGE, status.value, 0, reason, 5)])}
    page_processor._warc.close()
    assert not list((folder / "warc").glob("*.warc.gz*"))
    page_processor._log.flush()
    entry = parse_line((folder / "crawl.log").read_text().splitlines()[0])
    assert entry["status"] is status
    assert entry["reason"] == reason


def test_recent_urls_drops_repeats_within_capacity() -> None:
    recent = RecentUrls(4)  # two generations of two URLs
    assert recent.add("a")
    assert recent.add("b")  # the generation {a, b} is full: it becomes the older one
    assert not recent.add("a")
    assert recent.add("c")
    assert not recent.add("b")
    assert recent.add("d")  # {c, d} is full: {a, b} is forgotten
    assert recent.add("a")
    assert not recent.add("c")
    unlimited = RecentUrls(0)
    assert unlimited.add("x")
    assert unlimited.add("x")


def test_links_sent_lately_are_not_sent_again(tmp_path: Path) -> None:
    warc = WarcFileWriter(tmp_path / "warc", "test", 0)
    log = CrawlLogWriter(tmp_path / "crawl.log", background_flush=False)
    status = StageStatus(tmp_path / "status", "process", 0, interval=60)
    page_processor = PageProcessor(warc, log, VNODES, status, producer_id="0.t", recent_urls=100)
    first = _lines_by_vnode(page_processor.process(_html_result()))
    second = _lines_by_vnode(page_processor.process(_html_result()))
    assert sum(len(found) for found, _ in first.values()) == 3
    assert sum(len(found) for found, _ in second.values()) == 0
    own = vnode_of("a.test", VNODES)
    assert second[own][1][0][1] == "FETCHED"  # the page's own outcome still goes round
    assert status.counters[PROCESS_LINKS_RECENT.name] == 3
    warc.close()
    log.close()
    status.close()


def test_the_url_policy_turns_links_away_and_counts_why(tmp_path: Path) -> None:
    warc = WarcFileWriter(tmp_path / "warc", "test", 0)
    log = CrawlLogWriter(tmp_path / "crawl.log", background_flush=False)
    status = StageStatus(tmp_path / "status", "process", 0, interval=60)
    policy = UrlPolicy(ScopeSection(follow="host", exclude=("/map$",)))
    page_processor = PageProcessor(warc, log, VNODES, status, producer_id="0.t", policy=policy)
    by_vnode = _lines_by_vnode(page_processor.process(_html_result()))
    found = [url for group, _ in by_vnode.values() for url, _, _ in group]
    assert found == ["http://a.test/dir/other"]
    assert status.counters["links.rejected.scope:external-host"] == 1
    assert status.counters["links.rejected.scope:excluded"] == 1
    # A redirect target passes the same policy.
    result = FetchResult(url=PAGE, status=Status.REDIRECT, reason="http:301", http_status=301,
                         response_headers=[("Location", "http://b.test/")], started_ms=1,
                         hops="L", via="http://a.test/")
    (moved, _done), = _lines_by_vnode(page_processor.process(result)).values()
    assert moved == []
    assert status.counters["links.rejected.scope:external-domain"] == 1
    warc.close()
    log.close()
    status.close()


def test_refusals_by_the_trap_rules_are_logged_with_their_reason_and_path(
    tmp_path: Path,
) -> None:
    for log_refusals, logged in (("traps", {"http://a.test/x/x/x/x/p": "trap:repeated-segment"}),
                                 ("all", {"http://a.test/x/x/x/x/p": "trap:repeated-segment",
                                          "http://b.test/": "scope:external-host"}),
                                 ("none", {})):
        folder = tmp_path / log_refusals
        warc = WarcFileWriter(folder / "warc", "test", 0)
        log = CrawlLogWriter(folder / "crawl.log", background_flush=False)
        status = StageStatus(folder / "status", "process", 0, interval=60)
        policy = UrlPolicy(ScopeSection(follow="host", max_segment_repeats=3,
                                        log_refusals=log_refusals))
        page_processor = PageProcessor(warc, log, VNODES, status, producer_id="0.t",
                                       policy=policy)
        result = FetchResult(
            url=PAGE, status=Status.FETCHED, reason="", http_status=200,
            response_headers=[("Content-Type", "text/html")], started_ms=1, hops="L",
            via="http://a.test/",
            body=b'<a href="/x/x/x/x/p">trap</a><a href="http://b.test/">off</a>'
                 b'<a href="/fine">ok</a>',
        )
        page_processor.process(result)
        log.close()
        lines = [parse_line(line) for line in (folder / "crawl.log").read_text().splitlines()]
        refused = {line["url"]: line for line in lines if line["status"] is Status.REJECTED}
        assert {url: line["reason"] for url, line in refused.items()} == logged
        for line in refused.values():
            assert (line["hops"], line["via"], line["code"]) == ("LL", PAGE, -5000)
        assert status.counters["links.rejected.trap:repeated-segment"] == 1
        assert status.counters["found_by.link"] == 1  # the page itself, found by a link
        warc.close()
        status.close()


def test_path_ascending_sends_the_directories_above_a_page_that_answered(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]],
) -> None:
    page_processor, status = make_processor(policy=UrlPolicy(ScopeSection(max_depth=2)),
                                            path_ascending=True)
    deep = "http://a.test/x/y/z.html?q=1"
    result = FetchResult(url=deep, status=Status.HTTP_ERROR, reason="http:404", http_status=404,
                         started_ms=1, hops="L", via="http://a.test/")
    found = _found(page_processor.process(result))
    assert found == [
        ("http://a.test/", "LI", deep),
        ("http://a.test/x/", "LI", deep),
        ("http://a.test/x/y/", "LI", deep),
    ]
    assert status.counters["links.inferred"] == 3
    # Inferred URLs are one hop deeper and pass the same policy (here: too deep).
    result = FetchResult(url=deep, status=Status.FETCHED, reason="", http_status=200,
                         started_ms=2, hops="LL", via="http://a.test/x/")
    assert _found(page_processor.process(result)) == []
    assert status.counters["links.rejected.scope:too-deep"] == 3
    # No response, no inference: the host may not exist.
    result = FetchResult(url="http://c.test/a/b", status=Status.FETCH_ERROR,
                         reason="dns:unresolved", started_ms=3, hops="L")
    assert _found(page_processor.process(result)) == []


def test_without_path_ascending_no_directory_is_inferred(
    processor: tuple[PageProcessor, Path],
) -> None:
    page_processor, _ = processor
    found = [url for group, _ in _lines_by_vnode(page_processor.process(_html_result())).values()
             for url, _, _ in group]
    assert "http://a.test/dir/" not in found
    assert "http://a.test/" not in found


# -- sitemaps ---------------------------------------------------------------------------------


@pytest.fixture
def sitemap_processor(tmp_path: Path) -> Iterator[tuple[PageProcessor, StageStatus]]:
    warc = WarcFileWriter(tmp_path / "warc", "test", 0)
    log = CrawlLogWriter(tmp_path / "crawl.log", background_flush=False)
    status = StageStatus(tmp_path / "status", "process", 0, interval=60)
    policy = UrlPolicy(ScopeSection(skip_extensions=("gz", "xml")))
    yield PageProcessor(warc, log, VNODES, status, producer_id="0.s", policy=policy,
                        sitemaps=SitemapsSection(max_nesting=2)), status
    warc.close()
    log.close()
    status.close()


def _found(lines: list[str]) -> list[tuple[str, str, str]]:
    return sorted(item for group, _ in _lines_by_vnode(lines).values() for item in group)


def _sitemap(url: str, hops: str, via: str, body: bytes) -> FetchResult:
    return FetchResult(url=url, status=Status.FETCHED, reason="", http_status=200, body=body,
                       response_headers=[("Content-Type", "application/xml")], started_ms=1,
                       hops=hops, via=via)


def test_robots_txt_sends_the_sitemaps_it_names(
    sitemap_processor: tuple[PageProcessor, StageStatus],
) -> None:
    page_processor, status = sitemap_processor
    robots = FetchResult(
        url="http://a.test/robots.txt", status=Status.FETCHED, reason="", http_status=200,
        body=b"User-agent: *\nDisallow:\nSitemap: /sitemap.xml.gz\nSitemap: http://b.test/s.xml\n",
        started_ms=1, hops="P",
    )
    lines = page_processor.process(robots)
    # Sitemaps are exempt from skip_extensions; robots.txt itself has no outcome to report.
    assert _found(lines) == [
        ("http://a.test/sitemap.xml.gz", "S", "http://a.test/robots.txt"),
        ("http://b.test/s.xml", "S", "http://a.test/robots.txt"),
    ]
    assert all(done == [] for _, done in _lines_by_vnode(lines).values())
    # A robots.txt that failed names nothing.
    failed = FetchResult(url="http://c.test/robots.txt", status=Status.HTTP_ERROR,
                         reason="http:503", http_status=503, body=b"Sitemap: /x.xml\n", hops="P")
    assert page_processor.process(failed) == []
    assert status.counters["sitemaps.named"] == 2


def test_a_sitemap_sends_its_own_hosts_urls_and_those_of_the_robots_txt_naming_it(
    sitemap_processor: tuple[PageProcessor, StageStatus],
) -> None:
    page_processor, status = sitemap_processor
    body = (b"<urlset><url><loc>http://b.test/1</loc></url><url><loc>http://a.test/2</loc>"
            b"</url><url><loc>http://c.test/3</loc></url></urlset>")
    # On b.test, named by the robots.txt of a.test: b.test and a.test URLs pass.
    lines = page_processor.process(_sitemap("http://b.test/s.xml", "S",
                                            "http://a.test/robots.txt", body))
    found = _found(lines)
    assert [url for url, _, _ in found] == ["http://a.test/2", "http://b.test/1"]
    assert {hops for _, hops, _ in found} == {"SM"}
    assert status.counters["links.rejected.sitemap:cross-host"] == 1
    assert _lines_by_vnode(lines)[vnode_of("b.test", VNODES)][1][0][:2] == (
        "http://b.test/s.xml", "FETCHED"
    )
    # Named by an index, a sitemap lists its own host's URLs only.
    lines = page_processor.process(_sitemap("http://b.test/t.xml", "SS", "http://b.test/i.xml",
                                            body.replace(b"/1", b"/4").replace(b"/2", b"/5")))
    assert [url for url, _, _ in _found(lines)] == ["http://b.test/4"]


def test_an_index_sends_its_sitemaps_up_to_the_nesting_limit(
    sitemap_processor: tuple[PageProcessor, StageStatus],
) -> None:
    page_processor, status = sitemap_processor
    index = (b"<sitemapindex><sitemap><loc>http://a.test/part-1.xml</loc></sitemap>"
             b"<sitemap><loc>http://a.test/part-2.xml.gz</loc></sitemap></sitemapindex>")
    lines = page_processor.process(_sitemap("http://a.test/index.xml", "S",
                                            "http://a.test/robots.txt", index))
    assert _found(lines) == [
        ("http://a.test/part-1.xml", "SS", "http://a.test/index.xml"),
        ("http://a.test/part-2.xml.gz", "SS", "http://a.test/index.xml"),
    ]
    # An index at the last level: its children are refused.
    lines = page_processor.process(_sitemap("http://a.test/deep.xml", "SS",
                                            "http://a.test/index.xml", index))
    assert _found(lines) == []
    assert status.counters["links.rejected.sitemap:too-deep"] == 2


def test_a_page_listed_in_a_sitemap_is_parsed_as_a_page(
    sitemap_processor: tuple[PageProcessor, StageStatus],
) -> None:
    page_processor, _ = sitemap_processor
    result = _html_result()
    result.hops = "SM"
    found = _found(page_processor.process(result))
    assert ("http://a.test/dir/other", "SML", PAGE) in found


# -- metadata records -------------------------------------------------------------------------


def _metadata_blocks(folder: Path) -> dict[str, str]:
    """Target URI -> block of each metadata record in the WARC files of ``folder``."""
    from warcio.archiveiterator import ArchiveIterator

    blocks = {}
    for path in sorted((folder / "warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                if record.rec_type == "metadata":
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    blocks[uri] = record.content_stream().read().decode("utf-8")
    return blocks


def test_a_page_gets_a_metadata_record_of_everything_it_led_to(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]], tmp_path: Path
) -> None:
    # The policy turns the other host away: the metadata still lists it (what the page links).
    page_processor, _ = make_processor(policy=UrlPolicy(ScopeSection(follow="host")),
                                       path_ascending=True, sitemaps=SitemapsSection())
    page_processor.process(_html_result())
    robots = FetchResult(url="http://a.test/robots.txt", status=Status.FETCHED, reason="",
                         http_status=200, body=b"Sitemap: /sm.xml\n", started_ms=3, hops="P",
                         response_headers=[("Content-Type", "text/plain")], duration_ms=4)
    page_processor.process(robots)
    page_processor.process(FetchResult(url="http://a.test/gone", status=Status.FETCH_ERROR,
                                       reason="timeout:read", started_ms=5, hops="L"))
    page_processor._warc.close()
    blocks = _metadata_blocks(tmp_path)
    assert set(blocks) == {PAGE, "http://a.test/robots.txt"}  # no response, no metadata
    assert blocks[PAGE].split("\r\n") == [
        "via: http://a.test/", "hopsFromSeed: L", "fetchTimeMs: 12",
        "outlink: http://a.test/dir/other L", "outlink: http://b.test/x L",
        "outlink: http://a.test/map L", "outlink: http://a.test/dir/ I",
        "outlink: http://a.test/ I", "",
    ]
    assert blocks["http://a.test/robots.txt"].split("\r\n") == [
        "hopsFromSeed: P", "fetchTimeMs: 4", "outlink: http://a.test/sm.xml S", ""]


def test_metadata_records_can_be_turned_off(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]], tmp_path: Path
) -> None:
    page_processor, _ = make_processor(metadata_records=False)
    page_processor.process(_html_result())
    page_processor._warc.close()
    assert _metadata_blocks(tmp_path) == {}


# -- what a page's parse finds ----------------------------------------------------------------

RICH = b"""<html><head><meta name="robots" content="noindex">
<link rel="canonical" href="/dir/page?utm=x"><link rel="stylesheet" href="/s.css">
<meta http-equiv="refresh" content="30; url=/dir/next"></head>
<body><a href="other">same host</a><img src="http://cdn.test/i.png"></body></html>"""


def _rich_result(body: bytes = RICH, headers: tuple[tuple[str, str], ...] = ()) -> FetchResult:
    return dataclasses.replace(
        _html_result(), body=body,
        response_headers=[("Content-Type", "text/html; charset=utf-8"), *headers])


def test_links_embeds_and_a_refresh_go_round_with_their_own_hop(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]], tmp_path: Path
) -> None:
    page_processor, status = make_processor()
    result = _rich_result(headers=(("Link", "</rss>; rel=alternate"),))
    found = _found(page_processor.process(result))
    assert found == [
        ("http://a.test/dir/next", "LR", PAGE),
        ("http://a.test/dir/other", "LL", PAGE),
        ("http://a.test/dir/page?utm=x", "LL", PAGE),
        ("http://a.test/rss", "LL", PAGE),
        ("http://a.test/s.css", "LE", PAGE),
        ("http://cdn.test/i.png", "LE", PAGE),
    ]
    assert status.counters["directives.noindex"] == 1  # counted, and archived all the same
    assert "directives.nofollow" not in status.counters
    page_processor._warc.close()
    assert ("response", PAGE) in _kinds_and_uris(tmp_path)
    assert _metadata_blocks(tmp_path)[PAGE].split("\r\n") == [
        "via: http://a.test/", "hopsFromSeed: L", "fetchTimeMs: 12", "robots: noindex",
        "canonical: http://a.test/dir/page?utm=x",
        "outlink: http://a.test/dir/next R", "outlink: http://a.test/rss L",
        "outlink: http://a.test/dir/page?utm=x L", "outlink: http://a.test/dir/other L",
        "outlink: http://a.test/s.css E", "outlink: http://cdn.test/i.png E", "",
    ]


def test_a_nofollow_page_sends_only_its_embeds_and_refresh(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]], tmp_path: Path
) -> None:
    page_processor, status = make_processor()
    lines = page_processor.process(_rich_result(headers=(("X-Robots-Tag", "pyflink-crawler: none"),
                                                         ("X-Robots-Tag", "otherbot: all"))))
    assert [(url, hops) for url, hops, _ in _found(lines)] == [
        ("http://a.test/dir/next", "LR"), ("http://a.test/s.css", "LE"),
        ("http://cdn.test/i.png", "LE")]
    # The page's own outcome still goes round.
    assert _lines_by_vnode(lines)[vnode_of("a.test", VNODES)][1][0][:2] == (PAGE, "FETCHED")
    assert status.counters["directives.nofollow"] == 1
    assert status.counters["directives.noindex"] == 1
    assert status.counters["links.rejected.nofollow:page"] == 2
    page_processor._warc.close()
    block = _metadata_blocks(tmp_path)[PAGE]
    assert "robots: noindex,nofollow\r\n" in block
    assert "outlink: http://a.test/dir/other" not in block


def test_a_rel_nofollow_link_is_not_routed(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]],
) -> None:
    page_processor, status = make_processor()
    body = b'<a href="/x" rel="nofollow">x</a><a href="/y">y</a>'
    assert [url for url, _, _ in _found(page_processor.process(_rich_result(body)))] == [
        "http://a.test/y"]
    assert status.counters["links.rejected.nofollow:link"] == 1


def test_the_processor_uses_the_extractor_it_is_given(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]],
) -> None:
    extractor = LinkExtractor(follow=("a",), max_outlinks=1, robots_token="mybot")
    page_processor, status = make_processor(links=extractor)
    body = (b'<meta name="mybot" content="nofollow"><meta name="robots" content="noindex">'
            b'<img src="/i.png"><a href="/1">1</a><a href="/2">2</a>')
    assert _found(page_processor.process(_rich_result(body))) == []
    assert status.counters["links.rejected.nofollow:page"] == 2
    page_processor.process(dataclasses.replace(_rich_result(body.replace(b"mybot", b"other")),
                                               url="http://a.test/second"))
    assert status.counters["links.rejected.parse:over-limit"] == 1


def test_a_response_that_is_not_html_records_its_headers_robots_and_canonical(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]], tmp_path: Path
) -> None:
    page_processor, status = make_processor()
    pdf = FetchResult(
        url="http://a.test/doc.pdf", status=Status.FETCHED, reason="", http_status=200,
        response_headers=[("Content-Type", "application/pdf"), ("X-Robots-Tag", "noindex"),
                          ("Link", '<http://a.test/doc.html>; rel="canonical"')],
        body=b"%PDF-1.4", started_ms=1, hops="L", via=PAGE)
    assert _found(page_processor.process(pdf)) == [
        ("http://a.test/doc.html", "LL", "http://a.test/doc.pdf")]
    page_processor._warc.close()
    assert _metadata_blocks(tmp_path)["http://a.test/doc.pdf"].split("\r\n")[3:5] == [
        "robots: noindex", "canonical: http://a.test/doc.html"]


# -- revisits ---------------------------------------------------------------------------------


class _Captures(dict):
    """A capture store in a dict (the process stage keeps it in keyed state)."""

    def put(self, digest: str, capture: object) -> None:
        self[digest] = capture


def _kinds_and_uris(folder: Path) -> list[tuple[str, str]]:
    return [record for path in sorted((folder / "warc").glob("*.warc.gz"))
            for record in verify_warc_file(path) if record[0] in ("response", "revisit")]


def test_a_payload_archived_before_is_written_as_a_revisit(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]], tmp_path: Path
) -> None:
    captures = _Captures()
    page_processor, status = make_processor(captures=captures, dedup_min_bytes=10)
    page = _html_result()
    mirror = dataclasses.replace(page, url="http://mirror.test/dir/page", started_ms=7)
    cut = dataclasses.replace(page, url="http://mirror.test/cut", truncated="length")
    tiny = dataclasses.replace(page, url="http://a.test/tiny", body=b"short")
    tiny_again = dataclasses.replace(tiny, url="http://b.test/tiny")
    lines = {result.url: page_processor.process(result)
             for result in (page, mirror, cut, tiny, tiny_again)}
    page_processor._warc.close()
    assert _kinds_and_uris(tmp_path) == [
        ("response", PAGE), ("revisit", "http://mirror.test/dir/page"),
        ("response", "http://mirror.test/cut"),  # a truncated payload is not the entity
        ("response", "http://a.test/tiny"), ("response", "http://b.test/tiny"),  # too short
    ]
    assert status.counters[PROCESS_WARC_REVISITS.name] == 1
    [capture] = captures.values()
    assert capture.target_uri == PAGE
    # The revisit's page is still parsed and routed: its links go round like any page's.
    assert [url for url, _, _ in _found(lines[mirror.url])] == [
        "http://b.test/x", "http://mirror.test/dir/other", "http://mirror.test/map"]
    # Its outcome says it is a copy of another URL's page (the shape budgets count no good
    # page for it); the same URL fetched again with the same payload is no copy.
    def reasons(url: str) -> list[str]:
        return [event[3] for line in lines[url]
                for event in parse_record(decode_line(line)[1]).done]

    assert reasons(mirror.url) == ["duplicate:payload"]
    assert reasons(PAGE) == reasons(tiny_again.url) == [""]
    again = page_processor.process(dataclasses.replace(page, started_ms=9))
    assert [event[3] for line in again for event in parse_record(decode_line(line)[1]).done] == [
        ""]


def test_a_page_that_repeats_a_few_words_says_so_in_its_outcome(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]],
) -> None:
    page_processor, status = make_processor(near_duplicates=True)
    stuffed = " ".join(["cheap", "best", "deals", "casino", "free", "win"] * 10)
    prose = ("A reader's text of this length uses many words, each in its place, and says "
             "something about the world: a walk along the river in autumn, the bread from the "
             "bakery near the station, and the names of the people met on the way home.")

    def reason(url: str, text: str) -> str:
        body = f"<html><body><p>{text}</p><a href='/next'>next</a></body></html>".encode()
        lines = page_processor.process(dataclasses.replace(_html_result(), url=url, body=body))
        page_processor.near_probes.clear()
        [event] = [event for line in lines for event in parse_record(decode_line(line)[1]).done]
        return event[3]

    # (The domain and shape budgets count it as no good page: crawl/crawldb/budgets.py.)
    assert reason("http://farm.test/cheap-best-1.html", stuffed) == "thin:repeated-words"
    assert reason("http://a.test/walk.html", prose) == ""
    assert reason("http://a.test/short.html", "cheap cheap cheap") == ""  # too short to judge
    assert status.counters["pages.repetitive"] == 1


def test_a_soft_404_is_archived_and_logged_as_such_and_its_links_not_followed(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]], tmp_path: Path,
) -> None:
    page_processor, status = make_processor(near_duplicates=True)

    def not_found(path: str) -> bytes:
        return (f"<html><head><title>Not found: {path}</title></head><body><p>Sorry, there "
                f"is nothing at {path} on this site; the links below lead to what there is.</p>"
                "<a href='/'>Home</a> <a href='/news/'>News</a></body></html>").encode()

    probe = dataclasses.replace(_html_result(), url="http://a.test/f00d.html", hops="N",
                                body=not_found("/f00d.html"))
    probe.not_found = not_found_print(probe, LinkExtractor())
    assert probe.not_found
    assert page_processor.process(probe) == []  # archived and logged; no outcome, no links
    soft = dataclasses.replace(_html_result(), url="http://a.test/old/page-7.html",
                               body=not_found("/old/page-7.html"), not_found=probe.not_found)
    lines = page_processor.process(soft)
    assert page_processor.near_probes == []  # the index keeps pages, not not-found pages
    [record] = [parse_record(decode_line(line)[1]) for line in lines]
    assert record.found == []
    assert [event[3] for event in record.done] == ["soft-404"]
    page = dataclasses.replace(_html_result(), url="http://a.test/news/1.html",
                               not_found=probe.not_found)
    lines = page_processor.process(page)
    assert page_processor.near_probes  # a page: the near-duplicate index has it
    assert [event[3] for line in lines for event in parse_record(decode_line(line)[1]).done] == [
        ""]
    page_processor._log.flush()
    page_processor._warc.close()
    logged = [parse_line(line) for line in (tmp_path / "crawl.log").read_text().splitlines()]
    assert [(entry["url"], entry["hops"], entry["http_status"], entry["reason"])
            for entry in logged] == [
        (probe.url, "N", 200, ""), (soft.url, "L", 200, "soft-404"), (page.url, "L", 200, "")]
    assert [uri for kind, uri in _kinds_and_uris(tmp_path) if kind == "response"] == [
        probe.url, soft.url, page.url]
    assert status.counters["not_found_probes.soft-404"] == 1
    assert status.counters["pages.soft_not_found"] == 1
    assert status.counters["links.soft_not_found"] == 2


def test_payload_keys() -> None:
    page = _html_result()
    assert payload_key(page, 1).startswith("sha1:")
    assert payload_key(page, 1) == payload_key(dataclasses.replace(page, url="http://x.test/"), 1)
    assert payload_key(page, 10**9) == "url:" + PAGE
    assert payload_key(dataclasses.replace(page, truncated="time"), 1) == "url:" + PAGE
    failed = FetchResult(url=PAGE, status=Status.FETCH_ERROR, reason="timeout:read")
    assert payload_key(failed, 1) == "url:" + PAGE


# ---------------------------------------------------------------------------- cash


def _cash_by_url(lines: list[str]) -> dict[str, float]:
    cash = {}
    for line in lines:
        record = parse_record(decode_line(line)[1])
        if record.cash is not None:
            cash.update((url, amount) for (url, _, _), amount in zip(record.found, record.cash,
                                                                      strict=True))
    return cash


def test_a_page_passes_its_cash_on_split_over_what_it_leads_to(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]],
) -> None:
    # HTML has four outlinks (two are not URLs): one of them the policy refuses, whose share
    # leaves the flow, and a page that found nothing passes nothing on.
    page_processor, _ = make_processor(policy=UrlPolicy(ScopeSection(exclude=("/map$",))),
                                       flow="cash")
    lines = page_processor.process(dataclasses.replace(_html_result(), cash=0.6))
    assert _cash_by_url(lines) == {"http://a.test/dir/other": 0.2, "http://b.test/x": 0.2}
    done = [event for line in lines for event in parse_record(decode_line(line)[1]).done]
    assert done == [(PAGE, "FETCHED", 200, "", 1_700_000_000_000, None, 0.6)]  # spent
    # The page's own line names the other domains it links to (domain budgets: reciprocity).
    out = [pair for line in lines for pair in parse_record(decode_line(line)[1]).out]
    assert out == [("a.test", "b.test")]
    empty = dataclasses.replace(_html_result(), url="http://a.test/empty", body=b"<p>x</p>",
                                cash=0.6)
    (line,) = page_processor.process(empty)
    assert parse_record(decode_line(line)[1]).done[0] == (
        "http://a.test/empty", "FETCHED", 200, "", 1_700_000_000_000)


def test_with_shares_a_page_passes_one_share_on_whatever_cash_it_had(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]],
) -> None:
    page_processor, _ = make_processor(policy=UrlPolicy(ScopeSection(exclude=("/map$",))),
                                       flow="shares")
    for cash in (0.6, 0.003):
        page = dataclasses.replace(_html_result(), cash=cash)
        lines = page_processor.process(page)
        assert _cash_by_url(lines) == pytest.approx(
            {"http://a.test/dir/other": 1 / 3, "http://b.test/x": 1 / 3})
        done = [event for line in lines for event in parse_record(decode_line(line)[1]).done]
        assert done[0][-1] == cash  # the fetch still spends what the URL had


def test_repeats_of_recent_urls_bring_their_cash_later_in_one_record(
    make_processor: Callable[..., tuple[PageProcessor, StageStatus]],
) -> None:
    now = [100.0]
    page_processor, status = make_processor(recent_urls=1000, clock=lambda: now[0],
                                            flow="cash")
    first = page_processor.process(dataclasses.replace(_html_result(), cash=0.3))
    assert _cash_by_url(first)["http://b.test/x"] == 0.1
    # The same links from two more pages: dropped as repeats, their cash held...
    for page in ("http://a.test/dir/p2", "http://a.test/dir/p3"):
        lines = page_processor.process(dataclasses.replace(_html_result(), url=page, cash=0.3))
        assert "http://b.test/x" not in _cash_by_url(lines)
    # ...and sent with the next page once a second has passed.
    now[0] += 1.5
    lines = page_processor.process(dataclasses.replace(
        _html_result(), url="http://a.test/dir/p4", body=b"<p>no links</p>"))
    # p2 and p3 have four links each (PAGE among them): 0.075 apiece.
    assert _cash_by_url(lines) == pytest.approx({
        "http://b.test/x": 0.15, "http://a.test/dir/other": 0.15, "http://a.test/map": 0.15,
        PAGE: 0.075})
    assert status.counters[PROCESS_LINKS_HELD_CASH.name] == 4
