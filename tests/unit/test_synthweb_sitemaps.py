"""The sitemap profile of the synthetic web (synthweb/sitemaps.py): what it serves, read back
with the crawler's own sitemap parser, and the ground truth the model crawler derives."""

from __future__ import annotations

import pytest

from crawl.config import SitemapsSection
from crawl.sitemaps import parse_sitemap, sitemaps_in_robots
from synthweb import SyntheticWeb, WebConfig, audit_log
from synthweb import sitemaps as sitemap_web
from synthweb.requestlog import RequestRecord
from synthweb.urls import split_url

WEB = SyntheticWeb(WebConfig(seed=7, hosts=6).with_sitemap_profile())
EXPECTED = WEB.expected_crawl(WEB.seeds())


def test_robots_txt_names_the_sitemaps_the_model_expects() -> None:
    response = WEB.respond(sitemap_web.HOST_A, "/robots.txt")
    urls, _ = sitemaps_in_robots(response.body, f"http://{sitemap_web.HOST_A}/robots.txt", 50)
    assert tuple(urls) == sitemap_web.robots_sitemaps(sitemap_web.HOST_A)
    assert len(urls) == 4


@pytest.mark.parametrize("url", sorted(sitemap_web.DOCUMENTS))
def test_every_document_reads_back_as_what_it_lists(url: str) -> None:
    host, path = split_url(url)
    response = WEB.respond(host, path, accept_gzip=True)
    assert response.status == 200
    assert not any(name == "Content-Encoding" for name, _ in response.headers)
    document = parse_sitemap(response.body, SitemapsSection())
    kind, listed = sitemap_web.DOCUMENTS[url]
    assert document.error == ""
    assert document.kind == {"gzip-urlset": "urlset"}.get(kind, kind)
    entries = document.sitemaps if kind == "index" else document.urls
    assert tuple(e.url for e in entries) == listed
    if kind == "gzip-urlset":
        assert response.body[:2] == b"\x1f\x8b"
        assert ("Content-Type", "application/x-gzip") in response.headers


def test_the_truth_follows_the_rules() -> None:
    truth = EXPECTED.sitemaps
    assert truth is not None
    a, b, c = (f"http://{h}" for h in sitemap_web.SITEMAP_HOSTS)
    assert truth.orphans == {
        f"{a}/orphan/1", f"{a}/orphan/2?from=sitemap&kind=xml", f"{a}/orphan/3",
        f"{a}/orphan/4", f"{a}/orphan/5", f"{b}/orphan/1",
    }
    # Cross-host listings, the index nested too deep (and what only it lists), a sitemap
    # robots.txt disallows.
    assert truth.refused == {
        f"{c}/orphan/1", f"{c}/orphan/2", f"{a}/sitemaps/deep.xml", f"{a}/orphan/9",
        f"{a}/private/sitemap.xml",
    }
    assert truth.refused <= EXPECTED.never
    assert truth.documents | truth.orphans <= EXPECTED.fetch.keys()
    assert f"{a}/sitemaps/nested-index.xml" in truth.documents
    assert sitemap_web.HOST_C not in EXPECTED.robots


def test_off_by_default_and_unchanged() -> None:
    plain = SyntheticWeb(WebConfig(seed=7, hosts=6))
    expected = plain.expected_crawl(plain.seeds())
    assert expected.sitemaps is None
    assert not plain.is_host(sitemap_web.HOST_A)
    assert set(expected.fetch) == {u for u in EXPECTED.fetch if "sm-" not in u}


def _record(url: str) -> RequestRecord:
    host, path = split_url(url)
    return RequestRecord(start=0.0, end=0.001, host=host, path=path, method="GET",
                         status=EXPECTED.fetch.get(url, 200), bytes=1, ua="pyflink-crawler/0.1")


def test_the_audit_flags_a_refused_url() -> None:
    requested = [f"http://{h}/robots.txt" for h in EXPECTED.robots] + list(EXPECTED.fetch)
    records = [_record(url) for url in requested]
    assert audit_log(records, EXPECTED, check_user_agent=False, tolerance=1e9) == []
    refused = f"http://{sitemap_web.HOST_A}/orphan/9"
    problems = audit_log(records + [_record(refused)], EXPECTED, check_user_agent=False,
                         tolerance=1e9)
    assert problems == [f"{refused}: requested but disallowed (robots.txt or 5xx robots.txt)"]
