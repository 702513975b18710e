"""Tests of the synthetic web: the model, its ground truth, the audit and the HTTP server.

The server tests talk to a real ``python -m synthweb`` subprocess over loopback. The last test
crawls the web with a small reference crawler built on Protego and Beautiful Soup (what the real
crawler uses) and checks the server's request log against the ground truth, so the model, the
served bytes, the ground truth and the audit are known to agree with each other.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import gzip
import http.client
import inspect
import json
import re
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import bs4
import pytest
from protego import Protego

from synthweb import (
    PageKind,
    RequestRecord,
    RobotsFile,
    RobotsGroup,
    RobotsKind,
    Rule,
    SyntheticWeb,
    SyntheticWebServer,
    WebConfig,
    audit_log,
    canonical_url,
    read_request_log,
)
from synthweb.robots import GARBAGE_VARIANTS
from synthweb.urls import split_url
from tests.fakes.synthweb import web_digest

TOKEN = "pyflink-crawler"
# Small and quick to crawl: short slow pages and crawl delays, every robots kind present.
SMALL = WebConfig(
    seed=7, hosts=12, pages_per_host=8, slow_delay_range=(0.3, 0.4), crawl_delays=(0.1,)
)
PACKAGE = Path(__file__).resolve().parents[2] / "synthweb"


# -- determinism and configuration ----------------------------------------------------------


def test_same_seed_gives_the_same_web() -> None:
    assert web_digest(SyntheticWeb(SMALL)) == web_digest(SyntheticWeb(SMALL))


def test_different_seed_gives_a_different_web() -> None:
    other = dataclasses.replace(SMALL, seed=SMALL.seed + 1)
    assert web_digest(SyntheticWeb(SMALL)) != web_digest(SyntheticWeb(other))
    home = "http://h0.synth.test/"
    assert SyntheticWeb(SMALL).page(home) != SyntheticWeb(other).page(home)


def test_web_is_the_same_in_another_process_with_another_hash_seed() -> None:
    code = "\n".join(
        [
            "import hashlib, json",
            "from synthweb import SyntheticWeb, WebConfig",
            inspect.getsource(web_digest),
            f"print(web_digest(SyntheticWeb(WebConfig.from_json({SMALL.to_json()!r}))))",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PYTHONPATH": str(PACKAGE.parent)},
    )
    assert result.stdout.strip() == web_digest(SyntheticWeb(SMALL))


def test_config_round_trips_through_json() -> None:
    assert WebConfig.from_json(SMALL.to_json()) == SMALL


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hosts": 0}, "hosts"),
        ({"redirect_share": 1.5}, "redirect_share"),
        ({"redirect_share": 0.6, "text_page_share": 0.6}, "page kind shares"),
        ({"crawl_delays": ()}, "crawl_delays"),
        ({"slow_delay_range": (2.0, 1.0)}, "slow_delay_range"),
    ],
)
def test_invalid_config_names_the_key(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(SMALL, **changes)


def test_unknown_config_key_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown WebConfig keys: colour"):
        WebConfig.from_json('{"colour": 1}')


def test_synthweb_imports_only_the_standard_library() -> None:
    for source in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top in ("synthweb", "__future__"), (
                    f"{source.name} imports {name}"
                )


# -- URLs and links -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("/p/3", "http://h3.synth.test/p/3"),
        ("p/3", "http://h3.synth.test/p/p/3"),
        ("../p/3", "http://h3.synth.test/p/3"),
        ("./3", "http://h3.synth.test/p/3"),
        ("HTTP://H3.SYNTH.TEST/p/3", "http://h3.synth.test/p/3"),
        ("http://h3.synth.test:80/p/3", "http://h3.synth.test/p/3"),
        ("http://h3.synth.test:8080/p/3", "http://h3.synth.test:8080/p/3"),
        ("/p/3#section-2", "http://h3.synth.test/p/3"),
        ("//h4.synth.test/p/3", "http://h4.synth.test/p/3"),
        ("http://h4.synth.test", "http://h4.synth.test/"),
        ("/P/3", "http://h3.synth.test/P/3"),
        ("", "http://h3.synth.test/p/5"),
        ("#top", "http://h3.synth.test/p/5"),
        ("mailto:someone@h3.synth.test", None),
        ("javascript:void(0)", None),
        ("tel:+1-555-0100", None),
        ("http://[bad", None),
        ("ftp://h3.synth.test/file", None),
        ("https://h3.synth.test/p/3", None),
    ],
)
def test_canonical_url(href: str, expected: str | None) -> None:
    assert canonical_url(href, "http://h3.synth.test/p/5") == expected


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_link_resolves_to_its_stated_url(seed: int) -> None:
    web = SyntheticWeb(WebConfig(seed=seed, hosts=30))
    for host in web.host_names():
        for page in web.pages(host):
            for link in page.links:
                assert canonical_url(link.href, page.url) == link.url, (page.url, link.href)
            if page.location is not None:
                assert canonical_url(page.location, page.url) == page.redirect_to


@pytest.mark.parametrize("parser", ["lxml", "html.parser"])
def test_served_html_holds_exactly_the_model_links(parser: str) -> None:
    web = SyntheticWeb(SMALL)
    html_pages = 0
    for host in web.host_names():
        for page in web.pages(host):
            if page.kind not in (PageKind.TEXT, PageKind.BINARY, PageKind.REDIRECT, PageKind.ERROR):
                soup = bs4.BeautifulSoup(web.body(page.url), parser)
                hrefs = [a["href"] for a in soup.find_all("a", href=True)]
                assert hrefs == [link.href for link in page.links], page.url
                html_pages += 1
    assert html_pages > 50


def test_showcase_home_page_has_every_kind_of_link() -> None:
    web = SyntheticWeb(SMALL)
    home = web.page("http://h0.synth.test/")
    assert home is not None
    hrefs = {link.href for link in home.links}
    for href in [
        "p/1",
        "./p/2",
        "/p/3#section-2",
        "HTTP://H0.SYNTH.TEST/t/6.txt",
        "http://h0.synth.test:80/img/7.png",
        "//h0.synth.test/e/8",
        "http://h1.synth.test",
        "",
        "#top",
        "mailto:webmaster@h0.synth.test",
        "javascript:void(0)",
        "tel:+1-555-0100",
        "http://[bad",
        "http://nohost-0.synth.test/p/1",
        "/missing/1",
    ]:
        assert href in hrefs
    kinds = {page.kind for page in web.pages("h0.synth.test")}
    assert kinds == set(PageKind)


def test_non_utf8_pages_declare_their_charset() -> None:
    web = SyntheticWeb(SMALL)
    latin1 = web.page("http://h0.synth.test/p/3")
    cp1251 = web.page("http://h0.synth.test/p/4")
    assert latin1 is not None
    assert cp1251 is not None
    assert latin1.content_type == "text/html; charset=ISO-8859-1"
    assert "Café".encode("iso-8859-1") in web.body(latin1.url)
    assert cp1251.content_type == "text/html"
    body = web.body(cp1251.url)
    assert b"charset=windows-1251" in body
    assert "Привет".encode("cp1251") in body


# -- robots.txt -----------------------------------------------------------------------------


def _robots(*groups: RobotsGroup, status: int = 200) -> RobotsFile:
    return RobotsFile("h.synth.test", RobotsKind.NORMAL, "test", status, "text/plain", b"", groups)


STAR_PRIVATE = RobotsGroup(("*",), (Rule(False, "/private/"), Rule(True, "/private/public/")))
OURS = RobotsGroup((TOKEN,), (Rule(False, "/no-bots/"),))


@pytest.mark.parametrize(
    ("robots", "path", "token", "allowed"),
    [
        (_robots(STAR_PRIVATE), "/private/1", TOKEN, False),
        (_robots(STAR_PRIVATE), "/private/public/1", TOKEN, True),  # longest match wins
        (_robots(STAR_PRIVATE), "/p/1", TOKEN, True),
        (_robots(STAR_PRIVATE, OURS), "/private/1", TOKEN, True),  # our group, not *
        (_robots(STAR_PRIVATE, OURS), "/no-bots/1", TOKEN, False),
        (_robots(STAR_PRIVATE, OURS), "/no-bots/1", "PyFlink-Crawler", False),  # any case
        (_robots(STAR_PRIVATE, OURS), "/no-bots/1", "otherbot", True),  # falls back to *
        (_robots(STAR_PRIVATE, OURS), "/private/1", "otherbot", False),
        (
            _robots(RobotsGroup(("*",), (Rule(False, "/p/1"), Rule(True, "/*/1")))),
            "/p/1",
            TOKEN,
            True,
        ),
        (_robots(RobotsGroup(("*",), (Rule(False, "/*.txt$"),))), "/t/1.txt", TOKEN, False),
        (_robots(RobotsGroup(("*",), (Rule(False, "/*.txt$"),))), "/t/1.txt?x", TOKEN, True),
        (_robots(RobotsGroup(("*",), (Rule(False, "/"),))), "/robots.txt", TOKEN, True),
        (_robots(RobotsGroup(("*",), (Rule(False, "/"),)), status=404), "/p/1", TOKEN, True),
        (_robots(status=503), "/p/1", TOKEN, False),
        (_robots(status=503), "/robots.txt", TOKEN, False),
        (_robots(RobotsGroup(("otherbot",), (Rule(False, "/"),))), "/p/1", TOKEN, True),
    ],
)
def test_robots_semantics(robots: RobotsFile, path: str, token: str, allowed: bool) -> None:
    assert robots.allowed(path, token) is allowed


def test_every_robots_kind_and_garbage_variant_is_present() -> None:
    web = SyntheticWeb(SMALL)
    files = [web.robots_rules(host) for host in web.host_names()]
    assert {f.kind for f in files} == set(RobotsKind)
    garbage = {f.variant for f in files if f.kind is RobotsKind.GARBAGE}
    assert garbage == set(GARBAGE_VARIANTS)
    assert {f.status for f in files if f.kind is RobotsKind.MISSING} <= {403, 404, 410}
    assert all(f.status >= 500 for f in files if f.kind is RobotsKind.UNAVAILABLE)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_robots_meaning_agrees_with_protego(seed: int) -> None:
    web = SyntheticWeb(WebConfig(seed=seed, hosts=30, pages_per_host=10))
    probes = [
        "/private/1",
        "/private/public/1",
        "/no-bots/1",
        "/for-bots/1",
        "/p/1",
        "/p/12",
        "/p/2",
        "/p/20",
        "/t/3.txt",
        "/e/1",
        "/",
    ]
    for host in web.host_names():
        robots = web.robots_rules(host)
        if robots.status != 200:
            continue
        parser = Protego.parse(robots.body.decode("utf-8-sig", errors="replace"))
        paths = probes + [page.url[len(host) + 7 :] for page in web.pages(host)]
        for token in (TOKEN, "otherbot", "somebot"):
            for path in paths:
                expected = robots.allowed(path, token)
                assert parser.can_fetch(f"http://{host}{path}", token) is expected, (
                    f"{host} {robots.variant} {token} {path}"
                )
            assert parser.crawl_delay(token) == robots.crawl_delay(token), host


def test_agent_group_rules_differ_from_star() -> None:
    web = SyntheticWeb(SMALL)
    (host,) = web.hosts_with_robots(RobotsKind.AGENT_GROUP)
    robots = web.robots_rules(host)
    for path in ("/no-bots/1", "/for-bots/2", "/private/3"):
        assert robots.allowed(path, TOKEN) != robots.allowed(path, "somebot"), path
    assert not robots.allowed("/p/1", "otherbot")
    assert "pyflink-crawler" not in robots.body.decode()  # the token is written in another case


# -- ground truth ---------------------------------------------------------------------------


def test_ground_truth_is_reachable_from_the_seeds_and_obeys_robots() -> None:
    web = SyntheticWeb(SMALL)
    expected = web.expected_crawl(web.seeds(3), TOKEN)
    assert not expected.never & set(expected.fetch)
    reached = set(expected.seeds)
    for url in expected.fetch:
        page = web.page(url)
        if page and page.status == 200 and page.content_type.startswith("text/html"):
            reached.update(link.url for link in page.links if link.url)
        if page and page.redirect_to:
            reached.add(page.redirect_to)
    assert set(expected.fetch) | expected.never <= reached
    for url, status in expected.fetch.items():
        host, path = split_url(url)
        assert web.robots_rules(host).allowed(path, TOKEN), url
        assert web.status(url) == status
        assert host in expected.robots
    for url in expected.never:
        host, path = split_url(url)
        assert not web.robots_rules(host).allowed(path, TOKEN), url


def test_hosts_with_5xx_robots_contribute_nothing() -> None:
    web = SyntheticWeb(SMALL)
    expected = web.expected_crawl(web.seeds(), TOKEN)
    unavailable = {host for host, status in expected.robots.items() if status >= 500}
    assert set(web.hosts_with_robots(RobotsKind.UNAVAILABLE)) < unavailable
    assert {"nohost-0.synth.test"} <= unavailable  # off the web: the proxy's 502
    assert not {split_url(url)[0] for url in expected.fetch} & unavailable
    assert {split_url(url)[0] for url in expected.never} & unavailable


def test_showcase_seed_reaches_every_feature() -> None:
    web = SyntheticWeb(SMALL)
    expected = web.expected_crawl(["http://h0.synth.test/"], TOKEN)
    fetch, host = expected.fetch, "http://h0.synth.test"
    assert [fetch[f"{host}/r/9"], fetch[f"{host}/r/10"], fetch[f"{host}/p/1"]] == [301, 308, 200]
    assert expected.redirects[f"{host}/r/9"] == f"{host}/r/10"
    assert expected.redirects[f"{host}/r/11"] == f"{host}/r/12"
    assert expected.redirects[f"{host}/r/12"] == f"{host}/r/11"  # a loop, each fetched once
    assert expected.redirects[f"{host}/r/13"] == "http://h1.synth.test/"
    assert fetch[f"{host}/e/8"] == 500
    assert fetch[f"{host}/missing/1"] == 404
    assert fetch[f"{host}/private/public/15"] == 200
    assert f"{host}/private/14" in expected.never
    assert 0.3 <= expected.slow[f"{host}/slow/5"] <= 0.4
    assert expected.robots["nohost-0.synth.test"] == 502
    assert "http://nohost-0.synth.test/p/1" in expected.never


def test_ground_truth_depends_on_the_agent_token() -> None:
    web = SyntheticWeb(SMALL)
    (agent_host,) = web.hosts_with_robots(RobotsKind.AGENT_GROUP)
    seeds = [f"http://{agent_host}/"]
    ours = web.expected_crawl(seeds, TOKEN)
    other = web.expected_crawl(seeds, "somebot")
    banned = web.expected_crawl(seeds, "OtherBot")
    assert f"http://{agent_host}/no-bots/1" in ours.never
    assert ours.fetch[f"http://{agent_host}/for-bots/2"] == 200
    assert f"http://{agent_host}/for-bots/2" in other.never
    assert other.fetch[f"http://{agent_host}/no-bots/1"] == 200
    assert banned.fetch == {}
    assert banned.robots == {agent_host: 200}


def test_crawl_delay_hosts_are_small() -> None:
    web = SyntheticWeb(dataclasses.replace(SMALL, crawl_delays=(0.5, 0.25)))
    expected = web.expected_crawl(web.seeds(), TOKEN)
    assert set(expected.crawl_delays) == set(web.hosts_with_robots(RobotsKind.CRAWL_DELAY))
    for host, delay in expected.crawl_delays.items():
        assert delay in (0.5, 0.25)
        assert len(web.pages(host)) == SMALL.crawl_delay_host_pages
        assert all(page.delay == 0 for page in web.pages(host))


# -- audit ----------------------------------------------------------------------------------


def _perfect_log(web: SyntheticWeb, seeds: list[str], gap: float = 1.0) -> list[RequestRecord]:
    """One request per expected URL, robots.txt first, one host after the other, well spaced."""
    expected = web.expected_crawl(seeds, TOKEN)
    clock = 1000.0
    records = []
    by_host = collections.defaultdict(list)
    for url in expected.fetch:
        by_host[split_url(url)[0]].append(url)
    for host, status in expected.robots.items():
        for url, code in [(f"http://{host}/robots.txt", status)] + [
            (u, expected.fetch[u]) for u in by_host[host]
        ]:
            path = split_url(url)[1]
            records.append(RequestRecord(clock, clock + 0.01, host, path, "GET", code, 10, TOKEN))
            clock += gap
    return records


def test_audit_accepts_a_correct_log() -> None:
    web = SyntheticWeb(SMALL)
    seeds = web.seeds(2)
    expected = web.expected_crawl(seeds, TOKEN)
    assert audit_log(_perfect_log(web, seeds), expected, min_delay=0.5) == []


def test_audit_accepts_one_not_found_probe_per_host_robots_txt_leaves_open() -> None:
    web = SyntheticWeb(SMALL)
    seeds = web.seeds(2)
    expected = web.expected_crawl(seeds, TOKEN)
    log = _perfect_log(web, seeds)
    probe = "/0123456789abcdef0123.html"
    open_host = split_url(next(iter(expected.fetch)))[0]
    [closed_host] = web.hosts_with_robots(RobotsKind.UNAVAILABLE)
    log.append(RequestRecord(9000.0, 9000.1, open_host, probe, "GET", 404, 10, TOKEN))
    assert audit_log(log, expected, min_delay=0.5) == []
    log.append(RequestRecord(9001.0, 9001.1, open_host, probe, "GET", 404, 10, TOKEN))
    log.append(RequestRecord(9002.0, 9002.1, closed_host, probe, "GET", 404, 10, TOKEN))
    assert audit_log(log, expected, min_delay=0.5) == [
        f"http://{closed_host}{probe}: not-found probe of a host robots.txt closes",
        f"http://{open_host}{probe}: requested 2 times",
    ]


def test_audit_reports_each_kind_of_violation() -> None:
    web = SyntheticWeb(SMALL)
    seeds = ["http://h0.synth.test/"]
    expected = web.expected_crawl(seeds, TOKEN)
    log = _perfect_log(web, seeds)
    robots, home, second = log[0], log[1], log[2]
    log[0] = dataclasses.replace(robots, end=robots.start + 0.5)
    log[1] = dataclasses.replace(home, start=robots.start + 0.1, end=robots.start + 0.2)  # overlap
    log[2] = dataclasses.replace(second, start=log[1].start + 0.2, end=log[1].start + 0.3)  # early
    log.append(dataclasses.replace(log[3], start=9000.0, end=9000.1))  # requested twice
    log.append(RequestRecord(9001.0, 9001.1, "h0.synth.test", "/private/14", "GET", 200, 1, TOKEN))
    log.append(RequestRecord(9002.0, 9002.1, "h0.synth.test", "/p/999", "GET", 404, 1, "curl"))
    log.append(RequestRecord(9003.0, 9003.1, "h99.synth.test", "/p/1", "GET", 502, 1, TOKEN))
    del log[5]
    problems = "\n".join(audit_log(log, expected, min_delay=0.5))
    for fragment in [
        "overlap on h0.synth.test",
        "less than the 0.500s delay",
        "requested 2 times",
        "/private/14: requested but disallowed",
        "/p/999: requested but not reachable",
        "User-Agent 'curl' lacks the token",
        "never requested",
        "http://h99.synth.test/p/1: requested before http://h99.synth.test/robots.txt",
    ]:
        assert fragment in problems


# -- the server, over real HTTP -------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyntheticWebServer]:
    log_path = tmp_path_factory.mktemp("synthweb") / "requests.jsonl"
    with SyntheticWebServer(SMALL, log_path, flush_interval=0.2) as running:
        yield running


def _connect(server: SyntheticWebServer) -> http.client.HTTPConnection:
    host, port = server.proxy_url.removeprefix("http://").rsplit(":", 1)
    return http.client.HTTPConnection(host, int(port), timeout=10)


def _get(
    server: SyntheticWebServer, url: str, method: str = "GET", **headers: str
) -> tuple[http.client.HTTPResponse, bytes]:
    connection = _connect(server)
    try:
        connection.request(method, url, headers={"User-Agent": f"{TOKEN}/test", **headers})
        response = connection.getresponse()
        return response, response.read()
    finally:
        connection.close()


def test_server_answers_proxy_form_requests(server: SyntheticWebServer) -> None:
    response, body = _get(server, "http://h0.synth.test/p/1")
    assert response.status == 200
    assert (
        response.getheader("Content-Type")
        == server.web.page("http://h0.synth.test/p/1").content_type
    )
    assert int(response.getheader("Content-Length")) == len(body)
    assert body == server.web.body("http://h0.synth.test/p/1")


def test_server_answers_origin_form_requests_with_host_header(server: SyntheticWebServer) -> None:
    connection = _connect(server)
    try:
        connection.putrequest("GET", "/p/1", skip_host=True)
        connection.putheader("Host", "H0.SYNTH.TEST:80")
        connection.endheaders()
        response = connection.getresponse()
        assert response.status == 200
        assert response.read() == server.web.body("http://h0.synth.test/p/1")
    finally:
        connection.close()


def test_server_answers_404_redirects_500_and_502(server: SyntheticWebServer) -> None:
    assert _get(server, "http://h0.synth.test/missing/1")[0].status == 404
    assert _get(server, "http://h0.synth.test/e/8")[0].status == 500
    response, _ = _get(server, "http://h0.synth.test/r/9")
    assert (response.status, response.getheader("Location")) == (301, "http://h0.synth.test/r/10")
    response, _ = _get(server, "http://h0.synth.test/r/10")
    assert (response.status, response.getheader("Location")) == (308, "/p/1")
    for host in ("nohost-7.synth.test", "h999.synth.test", "example.org"):
        response, body = _get(server, f"http://{host}/robots.txt")
        assert response.status == 502
        assert b"cannot resolve" in body


def test_server_serves_each_kind_of_robots_txt(server: SyntheticWebServer) -> None:
    web = server.web
    for host in web.host_names():
        robots = web.robots_rules(host)
        response, body = _get(server, f"http://{host}/robots.txt")
        assert (response.status, body) == (robots.status, robots.body), robots.variant


def test_server_gzips_when_asked(server: SyntheticWebServer) -> None:
    web = server.web
    page = next(p for p in web.pages("h0.synth.test") if p.gzip and p.status == 200)
    response, body = _get(server, page.url, **{"Accept-Encoding": "gzip, deflate"})
    assert response.getheader("Content-Encoding") == "gzip"
    assert gzip.decompress(body) == web.body(page.url)
    response, body = _get(server, page.url)
    assert response.getheader("Content-Encoding") is None
    assert body == web.body(page.url)


def test_server_answers_head_and_refuses_post(server: SyntheticWebServer) -> None:
    response, body = _get(server, "http://h0.synth.test/p/1", method="HEAD")
    assert response.status == 200
    assert body == b""
    assert int(response.getheader("Content-Length")) == len(
        server.web.body("http://h0.synth.test/p/1")
    )
    assert _get(server, "http://h0.synth.test/p/1", method="POST")[0].status == 405


def test_slow_page_is_slow(server: SyntheticWebServer) -> None:
    url = "http://h0.synth.test/slow/5"
    started = time.monotonic()
    response, _ = _get(server, url)
    assert response.status == 200
    assert time.monotonic() - started >= server.web.page(url).delay - 0.01


def test_keep_alive_serves_many_requests_on_one_connection(server: SyntheticWebServer) -> None:
    connection = _connect(server)
    try:
        connection.request("GET", "http://h0.synth.test/")
        connection.getresponse().read()
        sock = connection.sock
        for path in ("/p/1", "/missing/2", "/r/9", "/robots.txt"):
            connection.request("GET", f"http://h0.synth.test{path}")
            response = connection.getresponse()
            response.read()
            assert response.getheader("Connection") is None
            assert connection.sock is sock
    finally:
        connection.close()


def test_pipelined_responses_come_back_in_order(server: SyntheticWebServer) -> None:
    host, port = server.proxy_url.removeprefix("http://").rsplit(":", 1)
    paths = ["/slow/5", "/p/1", "/missing/3"]
    request = "".join(f"GET http://h0.synth.test{p} HTTP/1.1\r\nHost: x\r\n\r\n" for p in paths)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            request.encode() + b"GET / HTTP/1.1\r\nHost: h0.synth.test\r\nConnection: close\r\n\r\n"
        )
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", received)
    assert statuses == [b"200", b"200", b"404", b"200"]


def test_malformed_request_gets_400(server: SyntheticWebServer) -> None:
    host, port = server.proxy_url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"NONSENSE\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 400 ")


def test_request_log_records_each_request(server: SyntheticWebServer) -> None:
    before = time.time()
    _get(server, "http://h0.synth.test/p/1?log-test", **{"User-Agent": "log-test/1.0"})
    records = [r for r in server.request_log() if r.ua == "log-test/1.0"]
    assert len(records) == 1
    record = records[0]
    assert (record.host, record.path, record.method, record.status) == (
        "h0.synth.test",
        "/p/1?log-test",
        "GET",
        404,
    )
    assert before <= record.start <= record.end <= time.time()
    assert record.bytes > 0
    with open(server.log_path, encoding="utf-8") as stream:
        keys = set(json.loads(stream.readline()))
    assert keys == {"start", "end", "host", "path", "method", "status", "bytes", "ua"}


def test_server_stops_on_sigterm_and_flushes_the_log(tmp_path: Path) -> None:
    log_path = tmp_path / "requests.jsonl"
    server = SyntheticWebServer(SMALL, log_path, flush_interval=60)
    with server:
        assert _get(server, "http://h0.synth.test/")[0].status == 200
    assert server.stop() == 0
    assert [r.path for r in read_request_log(log_path)] == ["/"]


# -- a reference crawl through the server ---------------------------------------------------


def _reference_crawl(server: SyntheticWebServer, seeds: list[str]) -> None:
    """A sequential, polite crawler on Protego and Beautiful Soup, as the real one will be."""
    connection = _connect(server)
    robots: dict[str, Protego | bool] = {}
    last_start: dict[str, float] = {}

    def get(url: str) -> tuple[int, dict[str, str], bytes]:
        host = split_url(url)[0]
        delay = 0.0
        if isinstance(robots.get(host), Protego):
            delay = robots[host].crawl_delay(TOKEN) or 0.0
        # A small margin: the server stamps a request when it reads it, a little after sending.
        wait = last_start.get(host, 0.0) + delay + 0.03 - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        last_start[host] = time.monotonic()
        connection.request("GET", url, headers={"User-Agent": f"{TOKEN}/0.1"})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()

    seen = set(seeds)
    queue = collections.deque(seeds)
    while queue:
        url = queue.popleft()
        host = split_url(url)[0]
        if host not in robots:
            status, _, body = get(f"http://{host}/robots.txt")
            robots[host] = (
                Protego.parse(body.decode("utf-8-sig", errors="replace"))
                if status < 400
                else status < 500
            )
        rules = robots[host]
        if not (rules.can_fetch(url, TOKEN) if isinstance(rules, Protego) else rules):
            continue
        status, headers, body = get(url)
        found: list[str | None] = []
        if 300 <= status < 400:
            found.append(canonical_url(headers["location"], url))
        elif status == 200 and headers["content-type"].lower().startswith("text/html"):
            soup = bs4.BeautifulSoup(body, "lxml")
            found += [canonical_url(a["href"], url) for a in soup.find_all("a", href=True)]
        for target in found:
            if target and target not in seen:
                seen.add(target)
                queue.append(target)
    connection.close()


def test_reference_crawl_matches_the_ground_truth(tmp_path: Path) -> None:
    config = dataclasses.replace(SMALL, hosts=8, slow_delay_range=(0.05, 0.1))
    with SyntheticWebServer(config, tmp_path / "requests.jsonl") as server:
        seeds = server.web.seeds(3)
        _reference_crawl(server, seeds)
        records = server.request_log()
    expected = server.web.expected_crawl(seeds, TOKEN)
    assert len(expected.fetch) > 40
    assert expected.never
    assert expected.crawl_delays
    assert audit_log(records, expected) == []
    assert {urllib.parse.urlsplit(u).hostname for u in expected.fetch} <= set(
        server.web.host_names()
    )
