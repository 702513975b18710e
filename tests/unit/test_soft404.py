"""Soft 404s (crawl.content.soft404): a host's answer to a path it cannot have, compared with
its pages, on the synthetic web's soft-404 hosts and on pages written here; and the fetch
stage's memory of the answers."""

from __future__ import annotations

import pytest

from crawl.content.links import LinkExtractor
from crawl.content.soft404 import NotFoundPrint, is_soft_404, not_found_print
from crawl.frontier.scheduler import probe_url
from crawl.model import FetchResult
from crawl.status import Status
from synthweb import SyntheticWeb, WebConfig

LINKS = LinkExtractor()


@pytest.fixture(scope="module")
def web() -> SyntheticWeb:
    return SyntheticWeb(WebConfig(seed=2, hosts=12).with_multi_domain_profile())


def _fetched(web: SyntheticWeb, url: str, hops: str = "L") -> FetchResult:
    host, path = url.split("/", 3)[2], "/" + url.split("/", 3)[3]
    response = web.respond(host, path)
    return FetchResult(url=url, status=Status.FETCHED, reason="", http_status=response.status,
                       response_headers=list(response.headers), body=response.body, hops=hops)


def _html(url: str, body: str, not_found: str = "", hops: str = "L") -> FetchResult:
    return FetchResult(url=url, status=Status.FETCHED, reason="", http_status=200,
                       response_headers=[("Content-Type", "text/html")], body=body.encode(),
                       hops=hops, not_found=not_found)


def _judged(result: FetchResult) -> bool:
    return is_soft_404(result, LINKS.extract(result))


def test_the_soft_404_hosts_pages_for_unknown_paths_are_told_from_their_real_pages(
    web: SyntheticWeb,
) -> None:
    soft_hosts = [host for host in web.host_names() if web.domains.plan(host).soft_404]
    assert len(soft_hosts) >= 2
    for host in soft_hosts:
        probe = _fetched(web, probe_url(host))
        assert probe.http_status == 200
        answer = not_found_print(probe, LINKS)
        assert answer
        # Each unknown path answers with a sentence of its own; the page is the same.
        for path in ("/archive/notes-7.html", "/archive/ideas-120.html", "/no/such/page",
                     "/docs/film-4.html/extra"):
            page = _fetched(web, f"http://{host}{path}")
            page.not_found = answer
            assert _judged(page), (host, path)
        real = [page.url for page in web.pages(host) if page.status == 200]
        assert len(real) >= 5
        for url in real:
            page = _fetched(web, url)
            page.not_found = answer
            assert not _judged(page), url


def test_a_page_that_names_what_was_asked_for_is_the_not_found_page_again() -> None:
    def not_found(path: str) -> str:
        return (f"<html><head><title>Not found: {path}</title></head><body>"
                f"<p>Sorry, nothing at {path} on this site. Try the search or go back to "
                "the start page and look around.</p>"
                '<a href="help/">Help</a> <a href="search.html">Search</a></body></html>')

    probe = _html("http://h.test/0a1b2c.html", not_found("/0a1b2c.html"))
    answer = not_found_print(probe, LINKS)
    # Relative links resolve elsewhere at another depth: the text tells.
    page = _html("http://h.test/a/b/c.html", not_found("/a/b/c.html"), answer)
    assert _judged(page)
    other = _html("http://h.test/a/b/c.html",
                  not_found("/a/b/c.html").replace("Not found", "Found"), answer)
    assert not _judged(other)


def test_a_page_with_the_same_layout_and_its_own_title_is_a_page() -> None:
    layout = ('<a href="/">Home</a> <a href="/news/">News</a> <a href="/about.html">About</a>'
              "<p>{text}</p>")
    probe = _html("http://h.test/zz.html", "<title>Example</title>"
                  + layout.format(text="We could not find that page, sorry about that."))
    answer = not_found_print(probe, LINKS)
    page = _html("http://h.test/news/1.html", "<title>Example - the news of the day</title>"
                 + layout.format(text="We could not find that page, sorry about that."), answer)
    assert not _judged(page)
    same = _html("http://h.test/news/2.html", "<title>Example</title>"
                 + layout.format(text="Something else entirely, written for this page."),
                 answer)
    assert _judged(same)  # the same title and the same links: the template again


def test_seeds_root_paths_and_hosts_without_a_not_found_page_are_not_judged() -> None:
    body = "<title>Home</title><a href='/a'>A</a><p>Welcome to the site of the week.</p>"
    answer = not_found_print(_html("http://h.test/zz.html", body), LINKS)
    assert _judged(_html("http://h.test/x.html", body, answer))
    assert not _judged(_html("http://h.test/", body, answer))  # the home page stays a page
    assert not _judged(_html("http://h.test/x.html", body, answer, hops=""))  # a seed
    assert not _judged(_html("http://h.test/x.html", body, ""))
    assert not _judged(_html("http://h.test/x.html", body, "not a print"))


def test_an_answer_that_is_no_html_page_has_no_print() -> None:
    result = FetchResult(url="http://h.test/zz.html", status=Status.FETCHED, reason="",
                         http_status=200, response_headers=[("Content-Type", "image/png")],
                         body=b"\x89PNG\r\n")
    assert not_found_print(result, LINKS) == ""


def test_a_print_is_one_line_that_reads_back() -> None:
    print_ = NotFoundPrint("page not found - h.test", frozenset({1, 0xFFFFFFFF}), 2**64 - 1, 12)
    text = print_.encode()
    assert "\n" not in text
    assert NotFoundPrint.decode(text) == print_
    empty = NotFoundPrint("", frozenset(), 0, 0)
    assert NotFoundPrint.decode(empty.encode()) == empty
    with pytest.raises(ValueError, match="values to unpack"):
        NotFoundPrint.decode("garbage")
