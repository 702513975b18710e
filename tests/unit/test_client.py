"""The HTTP client (crawl.http.client) over real loopback HTTP against the synthetic web."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawl.config import FetchSection, UserAgentSection
from crawl.http.client import NOT_MODIFIED, HttpFetcher, status_for_http
from crawl.http.io_loop import IoLoop
from crawl.model import FetchResult
from crawl.status import Status
from synthweb import PageKind, SyntheticWebServer, WebConfig


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyntheticWebServer]:
    log = tmp_path_factory.mktemp("web") / "requests.jsonl"
    with SyntheticWebServer(WebConfig(seed=7, hosts=12), log) as running:
        yield running


@pytest.fixture(scope="module")
def io() -> Iterator[IoLoop]:
    loop = IoLoop("test-io")
    yield loop
    loop.close()


def _fetch(io: IoLoop, proxy: str, url: str, **options: object) -> FetchResult:
    settings = {"proxy": proxy, "total_timeout_seconds": 5.0, **options.pop("fetch", {})}
    fetcher = io.run(HttpFetcher.create(FetchSection(**settings), UserAgentSection()))
    try:
        return io.run(fetcher.fetch(url, **options), timeout=30)
    finally:
        io.run(fetcher.aclose())


def _page(server: SyntheticWebServer, kind: PageKind) -> str:
    for host in server.web.host_names():
        for page in server.web.pages(host):
            if page.kind is kind:
                return page.url
    raise AssertionError(f"no {kind} page in the test web")


def test_html_page_is_fetched_with_headers_and_body(server: SyntheticWebServer, io: IoLoop) -> None:
    url = f"http://{server.web.host_names()[0]}/"
    result = _fetch(io, server.proxy_url, url, hops="L", via="http://x.test/")
    assert result.status is Status.FETCHED
    assert result.reason == ""
    assert result.http_status == 200
    assert result.content_type == "text/html"
    assert b"<a " in result.body
    assert result.started_ms > 0
    assert result.duration_ms >= 0
    assert result.hops == "L"
    assert result.via == "http://x.test/"
    sent = dict((k.lower(), v) for k, v in result.request_headers)
    assert sent["user-agent"].startswith("pyflink-crawler/")
    assert result.truncated == ""


def test_redirect_is_recorded_not_followed(server: SyntheticWebServer, io: IoLoop) -> None:
    url = _page(server, PageKind.REDIRECT)
    result = _fetch(io, server.proxy_url, url)
    assert result.status is Status.REDIRECT
    assert 300 <= result.http_status < 400
    assert result.header("Location")
    assert result.url == url


def test_missing_page_is_an_http_error(server: SyntheticWebServer, io: IoLoop) -> None:
    url = f"http://{server.web.host_names()[0]}/no/such/page"
    result = _fetch(io, server.proxy_url, url)
    assert (result.status, result.http_status, result.reason) == (
        Status.HTTP_ERROR, 404, "http:404"
    )


def test_unknown_host_through_the_proxy_is_a_502(server: SyntheticWebServer, io: IoLoop) -> None:
    result = _fetch(io, server.proxy_url, "http://nohost-1.synth.test/")
    assert (result.status, result.http_status) == (Status.HTTP_ERROR, 502)


def test_with_a_proxy_the_address_guard_does_not_apply(
    server: SyntheticWebServer, io: IoLoop
) -> None:
    # The proxy itself is on loopback, and it is asked for a loopback target: the proxy
    # answers, the guard does not step in.
    assert not FetchSection(proxy=server.proxy_url).allow_private_addresses
    result = _fetch(io, server.proxy_url, "http://127.0.0.1:9/")
    assert result.http_status > 0
    assert not result.reason.startswith("ssrf:")


def test_body_is_truncated_at_the_limit(server: SyntheticWebServer, io: IoLoop) -> None:
    url = f"http://{server.web.host_names()[0]}/"
    result = _fetch(io, server.proxy_url, url, max_bytes=100)
    assert result.status is Status.FETCHED
    assert len(result.body) == 100
    assert result.truncated == "length"


def test_slow_page_times_out(server: SyntheticWebServer, io: IoLoop) -> None:
    url = _page(server, PageKind.SLOW_HTML)
    assert server.web.page(url).delay >= 0.3
    result = _fetch(io, server.proxy_url, url, fetch={"total_timeout_seconds": 0.1})
    assert result.status is Status.FETCH_ERROR
    assert result.reason.startswith("timeout:")
    assert result.http_status == 0
    assert result.body == b""


def test_unreachable_proxy_is_a_fetch_error(io: IoLoop) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = _fetch(io, f"http://127.0.0.1:{port}", "http://h0.synth.test/")
    assert result.status is Status.FETCH_ERROR
    assert result.reason == "connect:proxy-unreachable"


def test_robots_fetch_follows_redirects(server: SyntheticWebServer, io: IoLoop) -> None:
    url = _page(server, PageKind.REDIRECT)
    result = _fetch(io, server.proxy_url, url, follow_redirects=True)
    assert result.http_status != 0
    assert result.status is not Status.REDIRECT


@pytest.mark.parametrize(
    ("http_status", "location", "expected"),
    [
        (200, None, (Status.FETCHED, "")),
        (204, None, (Status.FETCHED, "")),
        (301, "/x", (Status.REDIRECT, "http:301")),
        (308, "/x", (Status.REDIRECT, "http:308")),
        (302, None, (Status.HTTP_ERROR, "http:302:no-location")),
        (304, None, (Status.HTTP_ERROR, "http:304")),
        (404, None, (Status.HTTP_ERROR, "http:404")),
        (503, None, (Status.HTTP_ERROR, "http:503")),
    ],
)
def test_status_for_http(http_status: int, location: str | None, expected: tuple) -> None:
    assert status_for_http(http_status, location) == expected


def test_a_304_is_fetched_not_modified_only_for_a_conditional_request() -> None:
    assert status_for_http(304, None, conditional=True) == (Status.FETCHED, NOT_MODIFIED)
    assert status_for_http(304, None) == (Status.HTTP_ERROR, "http:304")


def test_a_revisit_is_a_conditional_get(io: IoLoop, tmp_path: Path) -> None:
    config = WebConfig(seed=3, hosts=8, pages_per_host=10).with_changing_profile(gone_pages=0)
    with SyntheticWebServer(config, tmp_path / "requests.jsonl") as changing_server:
        web = changing_server.web
        url = next(p.url for h in web.host_names() for p in web.pages(h)
                   if (plan := web.changing.plan(p.url)) and plan.change_class == "static"
                   and plan.etag)
        first = _fetch(io, changing_server.proxy_url, url)
        assert (first.status, first.http_status) == (Status.FETCHED, 200)
        validators = [("If-None-Match", first.header("ETag")),
                      ("If-Modified-Since", first.header("Last-Modified"))]
        again = _fetch(io, changing_server.proxy_url, url, conditional=validators)
        assert (again.status, again.reason, again.http_status) == (Status.FETCHED,
                                                                  NOT_MODIFIED, 304)
        assert again.body == b""
        sent = {name.lower(): value for name, value in again.request_headers}
        assert sent["if-none-match"] == first.header("ETag")
        changed = _fetch(io, changing_server.proxy_url, url,
                         conditional=[("If-None-Match", '"old"')])
        assert changed.http_status == 200
        records = changing_server.request_log()
    assert [(r.status, r.conditional) for r in records] == [(200, False), (304, True),
                                                            (200, True)]
