"""The changing-web profile: versions at known rates, validators, 304s, gone pages, and the
request log's record of conditional requests (over real HTTP on loopback)."""

from __future__ import annotations

import email.utils
import http.client
import time
from collections.abc import Iterator

import pytest

from synthweb import SyntheticWeb, SyntheticWebServer, WebConfig
from synthweb.changing import STATIC_MODIFIED

CONFIG = WebConfig(seed=3, hosts=12, pages_per_host=12).with_changing_profile(
    change_epoch=1_000_000.0, change_fast_period=2.0, gone_after=3.0,
    change_no_etag_host_share=0.25, change_no_validator_host_share=0.25,
)


def _urls(web: SyntheticWeb, **plan: object) -> list[str]:
    assert web.changing is not None
    found = []
    for host in web.host_names():
        for page in web.pages(host):
            change = web.changing.plan(page.url)
            if change is not None and all(getattr(change, k) == v for k, v in plan.items()):
                found.append(page.url)
    return found


def test_classes_versions_and_validators_follow_the_configuration() -> None:
    web = SyntheticWeb(CONFIG)
    changing = web.changing
    static, slow, fast = (_urls(web, change_class=c) for c in ("static", "slow", "fast"))
    assert static
    assert slow
    assert fast
    total = len(static) + len(slow) + len(fast)
    assert 0.25 <= len(static) / total <= 0.55
    url = fast[0]
    t = 1_000_100.0
    version = changing.version_at(url, t)
    # A version lasts a period (Last-Modified is its start, rounded down to the second).
    began = changing.modified_at(url, t)
    assert changing.version_at(url, began - 0.01) == version - 1
    assert changing.version_at(url, began + 1) == version
    assert changing.version_at(url, began + 1 + 2.0) == version + 1
    assert changing.body_at(url, t) != changing.body_at(url, t + 2.0)
    assert changing.etag_at(url, t) != changing.etag_at(url, t + 2.0)
    assert changing.body_at(static[0], t) == changing.body_at(static[0], t + 1e6)
    assert changing.version_at(static[0], t) == 0
    # Links never change: the page's body at any version has the same links.
    page = web.page(url)
    assert page is not None
    for link in page.links[:3]:
        assert link.href.encode() in changing.body_at(url, t + 7.0)
    # Hosts of each validator kind.
    assert _urls(web, etag=True, last_modified=True)
    assert _urls(web, etag=False, last_modified=True)
    assert _urls(web, etag=False, last_modified=False)
    # Without the profile nothing changes.
    assert SyntheticWeb(WebConfig(seed=3, hosts=12, pages_per_host=12)).changing is None


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyntheticWebServer]:
    config = WebConfig(seed=3, hosts=12, pages_per_host=12).with_changing_profile(
        change_fast_period=2.0, gone_after=2.0, change_no_etag_host_share=0.25,
        change_no_validator_host_share=0.25, change_sitemap_host_share=0.5,
    )
    log = tmp_path_factory.mktemp("changing") / "requests.jsonl"
    with SyntheticWebServer(config, log) as running:
        yield running


def _get(server: SyntheticWebServer, url: str, **headers: str) -> tuple[int, dict, bytes]:
    connection = http.client.HTTPConnection(server.proxy_url.removeprefix("http://"), timeout=5)
    try:
        connection.request("GET", url, headers={k.replace("_", "-"): v for k, v in
                                                headers.items()})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_conditional_gets_are_answered_304_while_the_version_holds(
    server: SyntheticWebServer,
) -> None:
    web = server.web
    changing = web.changing
    url = _urls(web, change_class="fast", etag=True)[0]
    status, headers, body = _get(server, url)
    assert status == 200
    assert body == changing.body_at(url, time.time()) or body == changing.body_at(
        url, time.time() - 0.5)
    etag = headers["ETag"]
    status, again, body = _get(server, url, If_None_Match=etag)
    if status == 304:  # (unless the version changed between the two requests)
        assert (again["ETag"], body) == (etag, b"")
    time.sleep(2.1)
    assert _get(server, url, If_None_Match=etag)[0] == 200
    assert _get(server, url, If_None_Match="*")[0] == 304
    static = _urls(web, change_class="static", etag=True)[0]
    tag = _get(server, static)[1]["ETag"]
    assert _get(server, static, If_None_Match=f'"x", W/{tag}')[0] == 304  # weak comparison
    # If-None-Match wins over If-Modified-Since.
    assert _get(server, static, If_None_Match='"other"',
                If_Modified_Since="Sun, 01 Jan 2090 00:00:00 GMT")[0] == 200


def test_last_modified_hosts_and_hosts_without_validators(server: SyntheticWebServer) -> None:
    web = server.web
    url = _urls(web, change_class="static", etag=False, last_modified=True)[0]
    status, headers, _ = _get(server, url)
    assert "ETag" not in headers
    modified = headers["Last-Modified"]
    assert _get(server, url, If_Modified_Since=modified)[0] == 304
    earlier = email.utils.formatdate(
        email.utils.parsedate_to_datetime(modified).timestamp() - 1, usegmt=True)
    assert _get(server, url, If_Modified_Since=earlier)[0] == 200
    assert _get(server, url, If_Modified_Since="not a date")[0] == 200
    bare = _urls(web, etag=False, last_modified=False)[0]
    status, headers, _ = _get(server, bare)
    assert "ETag" not in headers
    assert "Last-Modified" not in headers
    assert _get(server, bare, If_None_Match="*", If_Modified_Since=modified)[0] == 200


def test_gone_pages_answer_404_or_410_and_the_log_records_conditionals(
    server: SyntheticWebServer,
) -> None:
    gone = server.web.changing.gone_pages()
    assert len(gone) == 4
    assert {page.status for page in gone} == {404, 410}
    wait = max(page.at for page in gone) - time.time()
    if wait > 0:
        time.sleep(wait + 0.1)
    for page in gone:
        assert _get(server, page.url)[0] == page.status
        assert server.web.changing.gone(page.url, time.time()) == page
    url = _urls(server.web, change_class="static", etag=True)[1]
    _get(server, url, If_None_Match='"a"', If_Modified_Since="x")
    records = server.request_log()
    last = [r for r in records if r.url == url][-1]
    assert (last.inm, last.ims, last.conditional) == ('"a"', "x", True)
    assert not [r for r in records if r.url == gone[0].url][-1].conditional


def test_a_live_sitemap_gives_each_changing_page_its_current_lastmod(
    server: SyntheticWebServer,
) -> None:
    from crawl.config import SitemapsSection
    from crawl.content.sitemaps import parse_sitemap
    from crawl.crawldb.recrawl import parse_lastmod

    web, changing = server.web, server.web.changing
    hosts = [host for host in web.host_names() if changing.live_sitemap(host)]
    without = [host for host in web.host_names() if not changing.live_sitemap(host)]
    assert hosts
    assert without
    for host in hosts:
        assert web.robots_rules(host).status == 200
        robots = _get(server, f"http://{host}/robots.txt")[2].decode()
        assert robots.endswith(f"\nSitemap: http://{host}/changes.xml\n")
    for host in without:
        assert b"changes.xml" not in _get(server, f"http://{host}/robots.txt")[2]
        assert _get(server, f"http://{host}/changes.xml")[0] == 404
    fast = next(url for host in hosts for url in _urls(web, change_class="fast")
                if url.startswith(f"http://{host}/"))
    host = fast.split("/")[2]
    listed = {}
    for _ in range(2):  # a new version of the fast page every 2 s
        before = time.time()
        status, headers, body = _get(server, f"http://{host}/changes.xml")
        assert (status, headers["Content-Type"]) == (200, "application/xml")
        assert "ETag" not in headers
        document = parse_sitemap(body, SitemapsSection())
        lastmods = {entry.url: parse_lastmod(entry.lastmod, 2**31) for entry in document.urls}
        assert sorted(lastmods) == sorted(
            page.url for page in web.pages(host) if changing.plan(page.url) is not None)
        assert lastmods[fast] in {changing.modified_at(fast, before),
                                  changing.modified_at(fast, time.time())}
        listed[before] = lastmods
        time.sleep(2.1)
    first, second = listed.values()
    assert second[fast] > first[fast]
    static = [url for url in first if changing.change_class(url) == "static"]
    assert all(first[url] == second[url] == STATIC_MODIFIED for url in static)


def test_hosts_with_long_etags_send_only_those_and_honour_them(tmp_path) -> None:
    from crawl.crawldb.recrawl import parse_etag

    config = WebConfig(seed=3, hosts=12, pages_per_host=12).with_changing_profile(
        change_no_etag_host_share=0.0, change_no_validator_host_share=0.0,
        change_long_etag_host_share=1.0,
    )
    forms = set()
    with SyntheticWebServer(config, tmp_path / "requests.jsonl") as server:
        urls = _urls(server.web, change_class="static", long_etag=True)
        assert urls
        for url in urls[:40]:
            status, headers, _ = _get(server, url)
            assert status == 200
            assert "Last-Modified" not in headers
            tag, weak = parse_etag(headers["ETag"])  # long, and the crawler keeps it
            assert len(tag) > 32
            assert not weak
            forms.add("sha256" if "-" not in tag else tag.split("-", 1)[1].isdigit())
            assert _get(server, url, If_None_Match=headers["ETag"])[0] == 304
            assert _get(server, url, If_None_Match='"' + tag[:-1] + '"')[0] == 200
    assert forms == {"sha256", True, False}  # a SHA-256, S3's and Netlify's forms
