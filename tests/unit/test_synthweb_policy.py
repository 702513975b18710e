"""Tests of the synthetic web's URL-policy profile: spellings, traps, link farm, popular pages.

All on the model except one test through the real server. The model crawls below write the
request log the server would write, so the ground truth and both audits are checked against a
crawler with a URL policy and against one without.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import http.client
import inspect
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import bs4
import pytest

from synthweb import (
    PageKind,
    RequestRecord,
    SyntheticWeb,
    SyntheticWebServer,
    WebConfig,
    audit_log,
    audit_policy,
    canonical_url,
    is_farm,
    is_trap,
    page_identity,
    trap_area,
)
from synthweb.policy import (
    FARM_DOMAIN,
    TRAP_ENTRY_PATHS,
    TRAP_HOST,
    VARIANT_FORMS,
    farm_host_name,
)
from synthweb.urls import SESSION_ID_PARAMS, split_url

TOKEN = "pyflink-crawler"
SMALL = WebConfig(
    seed=7, hosts=12, pages_per_host=8, slow_delay_range=(0.3, 0.4), crawl_delays=(0.1,)
)
PROFILE = SMALL.with_url_policy_profile(farm_hosts=6, farm_pages_per_host=40)
PACKAGE = Path(__file__).resolve().parents[2] / "synthweb"
TRAPS = f"http://{TRAP_HOST}"


@pytest.fixture(scope="module")
def web() -> SyntheticWeb:
    return SyntheticWeb(PROFILE)


def _normal_pages(web: SyntheticWeb) -> list:
    return [page for host in web.host_names() for page in web.pages(host)]


def _some_policy_pages(web: SyntheticWeb) -> list:
    pages = [page for host in web.policy_host_names()[1:] for page in web.pages(host)[:15]]
    urls = [
        f"{TRAPS}/",
        f"{TRAPS}/calendar/2026/12",
        f"{TRAPS}/calendar?date=2026-12-31&view=day",
        f"{TRAPS}/calendar?date=2026-12-29&view=week",
        f"{TRAPS}/search",
        f"{TRAPS}/search?a=1&b=7&c=3",
        f"{TRAPS}/loop/",
        f"{TRAPS}/loop/sub/sub/",
    ]
    return pages + [web.page(url) for url in urls]


def _profile_digest(config: WebConfig) -> str:
    web = SyntheticWeb(config)
    sha = hashlib.sha256()
    for host in web.host_names() + web.policy_host_names()[1:]:
        sha.update(web.robots_rules(host).body)
        for page in web.pages(host):
            sha.update(repr(page).encode())
            sha.update(web.body(page.url))
    expected = web.expected_crawl(web.seeds())
    policy = expected.policy
    truth = [
        expected.fetch,
        sorted(expected.never),
        sorted(policy.trap_entries),
        sorted(policy.farm_entries),
        policy.in_links,
        web.popular_pages(),
    ]
    sha.update(json.dumps(truth).encode())
    return sha.hexdigest()


# -- off by default, configuration ------------------------------------------------------------


def test_profile_is_off_by_default() -> None:
    assert not WebConfig().url_policy_on
    assert not SMALL.url_policy_on
    assert PROFILE.url_policy_on
    web = SyntheticWeb(SMALL)
    assert web.policy_host_names() == []
    assert not web.is_host(TRAP_HOST)
    assert not web.is_host(farm_host_name(0))
    assert web.respond(TRAP_HOST, "/calendar/2026/12").status == 502
    assert web.respond(farm_host_name(0), "/robots.txt").status == 502
    assert web.respond("h0.synth.test", "/%70/1").status == 404
    assert web.respond("h0.synth.test", "/p/1;jsessionid=1").status == 404
    assert web.expected_crawl(web.seeds()).policy is None
    assert web.trap_entry_points() == frozenset()
    assert web.farm_entry_points() == frozenset()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"url_variant_share": 1.5}, "url_variant_share"),
        ({"farm_hosts": -1}, "farm_hosts"),
        ({"farm_pages_per_host": 1}, "farm_pages_per_host"),
        ({"farm_links_per_page": 0}, "farm_links_per_page"),
        ({"popular_pages": -2}, "popular_pages"),
    ],
)
def test_invalid_profile_config_names_the_key(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(SMALL, **changes)


def test_profile_config_round_trips_through_json() -> None:
    assert WebConfig.from_json(PROFILE.to_json()) == PROFILE
    profile = WebConfig().with_url_policy_profile()
    assert profile.traps
    assert (profile.farm_hosts, profile.farm_pages_per_host) == (20, 200)
    assert profile.url_variant_share > 0
    assert profile.popular_pages > 0


def test_profile_web_is_deterministic_in_another_process() -> None:
    assert _profile_digest(PROFILE) == _profile_digest(PROFILE)
    assert _profile_digest(PROFILE) != _profile_digest(dataclasses.replace(PROFILE, seed=8))
    code = "\n".join(
        [
            "import hashlib, json",
            "from synthweb import SyntheticWeb, WebConfig",
            "from synthweb.policy import TRAP_HOST",
            f"TRAPS = {TRAPS!r}",
            inspect.getsource(_profile_digest),
            f"print(_profile_digest(WebConfig.from_json({PROFILE.to_json()!r})))",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "4242", "PYTHONPATH": str(PACKAGE.parent)},
    )
    assert result.stdout.strip() == _profile_digest(PROFILE)


@pytest.mark.parametrize(
    "changes",
    [
        {"traps": True},
        {"farm_hosts": 3},
        {"popular_pages": 4},
        {"url_variant_share": 0.5},
        {"url_variant_share": 0.3, "traps": True, "farm_hosts": 2, "popular_pages": 3},
    ],
)
def test_profile_keeps_the_normal_link_structure(changes: dict[str, object]) -> None:
    plain = SyntheticWeb(SMALL)
    profiled = SyntheticWeb(dataclasses.replace(SMALL, **changes))
    variants = "url_variant_share" in changes
    for host in plain.host_names():
        before = plain.pages(host)
        after = profiled.pages(host)
        assert [p.url for p in after[: len(before)]] == [p.url for p in before]
        for old, new in zip(before, after, strict=False):
            assert (new.kind, new.status, new.redirect_to) == (
                old.kind,
                old.status,
                old.redirect_to,
            )
            assert [link.url for link in new.links[: len(old.links)]] == [
                link.url for link in old.links
            ]
            if not variants:
                assert new.links[: len(old.links)] == old.links
        added = after[len(before) :]
        assert [split_url(p.url)[1].split("/")[1][:4] for p in added] == (
            ["caf%", "cata"] if variants else []
        )


# -- page identity and spellings --------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "identity"),
    [
        ("http://h1.synth.test/p/3", "http://h1.synth.test/p/3"),
        ("HTTP://H1.Synth.TEST/p/3", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test:80/p/3", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test:8080/p/3", "http://h1.synth.test:8080/p/3"),
        ("http://h1.synth.test/%70/3", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/%70/%33", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/caf%c3%a9/2", "http://h1.synth.test/caf%C3%A9/2"),
        ("http://h1.synth.test/café/2", "http://h1.synth.test/caf%C3%A9/2"),
        ("http://h1.synth.test/a%2fb", "http://h1.synth.test/a%2Fb"),
        ("http://h1.synth.test/x/../p/3", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/./p/3", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/p/./3", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/%2e%2e/p/3", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test", "http://h1.synth.test/"),
        ("http://h1.synth.test/.", "http://h1.synth.test/"),
        ("http://h1.synth.test/p/3#top", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/p/3#", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/p/3?", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/p/3?jsessionid=ABC", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/p/3?PHPSESSID=abc", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/p/3?SID=1", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/p/3?AspSessionId=1", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/p/3?%73id=1", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/c?b=2&sid=x&a=1", "http://h1.synth.test/c?b=2&a=1"),
        ("http://h1.synth.test/c?sid=x&b=2&a=1&PHPSESSID=y", "http://h1.synth.test/c?b=2&a=1"),
        ("http://h1.synth.test/c?sidx=1&session=2", "http://h1.synth.test/c?sidx=1&session=2"),
        ("http://h1.synth.test/c?%69tem=1", "http://h1.synth.test/c?item=1"),
        ("http://h1.synth.test/p/3;jsessionid=ABC", "http://h1.synth.test/p/3"),
        ("http://h1.synth.test/p/3;JSESSIONID=A?lang=en", "http://h1.synth.test/p/3?lang=en"),
        ("http://h1.synth.test/p;v=1/3", "http://h1.synth.test/p;v=1/3"),
        (
            "HTTP://H1.Synth.Test:80/./%70/3;jsessionid=X?SID=Y&lang=en#top",
            "http://h1.synth.test/p/3?lang=en",
        ),
        ("http://h1.synth.test/p/1?log-test", "http://h1.synth.test/p/1?log-test"),
        ("mailto:someone@h1.synth.test", None),
        ("https://h1.synth.test/p/3", None),
        ("http://[bad", None),
    ],
)
def test_page_identity(url: str, identity: str | None) -> None:
    assert page_identity(url) == identity
    assert SyntheticWeb(SMALL).page_identity(url) == identity


@pytest.mark.parametrize("seed", [1, 2])
def test_page_identity_agrees_with_canonical_url_on_the_default_web(seed: int) -> None:
    web = SyntheticWeb(WebConfig(seed=seed, hosts=20))
    for page in _normal_pages(web):
        for link in page.links:
            assert page_identity(link.href, page.url) == canonical_url(link.href, page.url)


def test_every_link_identity_is_its_stated_url(web: SyntheticWeb) -> None:
    respelled = 0
    for page in _normal_pages(web) + _some_policy_pages(web):
        for link in page.links:
            assert page_identity(link.href, page.url) == link.url, (page.url, link.href)
            if link.url is not None:
                assert page_identity(link.url) == link.url
                respelled += canonical_url(link.href, page.url) != link.url
    assert respelled > 50


@pytest.mark.parametrize("parser", ["lxml", "html.parser"])
def test_served_html_holds_exactly_the_profile_links(web: SyntheticWeb, parser: str) -> None:
    for page in _normal_pages(web) + _some_policy_pages(web):
        if page.kind in (PageKind.TEXT, PageKind.BINARY, PageKind.REDIRECT, PageKind.ERROR):
            continue
        soup = bs4.BeautifulSoup(web.body(page.url), parser)
        hrefs = [a["href"] for a in soup.find_all("a", href=True)]
        assert hrefs == [link.href for link in page.links], page.url


def test_web_writes_every_kind_of_spelling(web: SyntheticWeb) -> None:
    hrefs = [
        (link.href, link.url)
        for page in _normal_pages(web)
        for link in page.links
        if link.url and link.href != link.url
    ]
    home = {link.href for link in web.page("http://h0.synth.test/").links}
    checks: dict[str, Callable[[str, str], bool]] = {
        "mixed-case host": lambda h, _: bool(
            re.match(r"(?i)http://(?=[^/]*[A-Z])(?=[^/]*[a-z])", h)
        ),
        "default port": lambda h, _: ":80/" in h or h.endswith(":80"),
        "percent-encoded unreserved": lambda h, _: "/%70/1" in h,
        "lower-case escape": lambda h, _: "%c3%a9" in h,
        "dot-dot": lambda h, _: "/../" in h,
        "dot": lambda h, _: "/./" in h,
        "empty path": lambda h, u: h == "http://h0.synth.test",
        "fragment": lambda h, _: "#" in h,
        "session path parameter": lambda h, _: ";jsessionid=" in h.lower(),
        "session id with real parameters": lambda h, u: "?" in u and "sid=" in h.lower(),
    }
    for name, check in checks.items():
        assert any(check(h, u) for h, u in hrefs), name
        assert any(check(h, u) for h, u in hrefs if h in home), f"{name} on the showcase home"
    names = {
        param.split("=")[0].lower()
        for href, _ in hrefs
        for param in href.partition("?")[2].partition("#")[0].split("&")
    }
    assert SESSION_ID_PARAMS <= names


def test_spellings_cover_every_form_and_keep_the_identity(web: SyntheticWeb) -> None:
    for url in (
        "http://h3.synth.test/p/2",
        "http://h0.synth.test/",
        web.pages("h2.synth.test")[-1].url,
    ):
        spellings = web.spellings(url)
        assert len(spellings) == len(VARIANT_FORMS)
        assert len(set(spellings)) >= len(VARIANT_FORMS) - 3
        assert all(page_identity(s) == url for s in spellings)
        assert url not in spellings


def test_server_answers_every_spelling_with_the_page(web: SyntheticWeb) -> None:
    checked = 0
    for page in _normal_pages(web):
        for link in page.links:
            written = canonical_url(link.href, page.url)  # as a crawler without a policy asks
            if link.url is None or written == link.url or is_trap(link.url) or is_farm(link.url):
                continue
            host, path = split_url(written)
            assert web.respond(host, path) == web.respond(*split_url(link.url)), written
            checked += 1
    assert checked > 50
    assert web.respond("h0.synth.test", "/p/1;jsessionid=1").status == 200
    assert web.respond("h0.synth.test", "/p/1?jsessionid=1&x=1").status == 404  # a real param


# -- traps --------------------------------------------------------------------------------------


def test_trap_predicates() -> None:
    assert is_trap(f"{TRAPS}/calendar/2026/12")
    assert is_trap("HTTP://TRAPS.SYNTH.TEST:80/search?a=1&sid=2")
    assert is_trap(f"{TRAPS}/anything")
    assert not is_trap(f"{TRAPS}/robots.txt")
    assert not is_trap("http://h1.synth.test/calendar/2026/12")
    assert trap_area(f"{TRAPS}/calendar?date=2026-12-01&view=day") == "calendar"
    assert trap_area(f"{TRAPS}/calendar/2027/01") == "calendar"
    assert trap_area(f"{TRAPS}/search?a=1") == "search"
    assert trap_area(f"{TRAPS}/loop/sub/sub/") == "loop"
    assert trap_area(f"{TRAPS}/") == "other"
    assert trap_area("http://h1.synth.test/loop/") is None
    assert not is_farm(f"{TRAPS}/")


def test_trap_entries_are_linked_from_the_showcase(web: SyntheticWeb) -> None:
    entries = web.trap_entry_points()
    assert entries == {TRAPS + path for path in TRAP_ENTRY_PATHS}
    home = web.page("http://h0.synth.test/")
    assert entries <= {link.url for link in home.links}
    linked = {
        link.url
        for page in _normal_pages(web)
        for link in page.links
        if link.url and is_trap(link.url)
    }
    assert linked == entries
    robots = web.robots_rules(TRAP_HOST)
    assert robots.status == 200
    assert robots.allowed("/calendar/2026/12", TOKEN)


def test_calendar_goes_on_forever(web: SyntheticWeb) -> None:
    url, seen = f"{TRAPS}/calendar/2026/12", set()
    for _ in range(300):
        page = web.page(url)
        assert page is not None, url
        assert page.status == 200, url
        seen.add(url)
        targets = [link.url for link in page.links]
        days = [t for t in targets if "date=" in t]
        assert 28 <= len(days) <= 31
        assert all(is_trap(t) for t in targets)
        url = targets[1]  # the next month
    assert len(seen) == 300
    assert url == f"{TRAPS}/calendar/2051/12"
    december = web.page(f"{TRAPS}/calendar/2026/12")
    assert [link.url for link in december.links[:3]] == [
        f"{TRAPS}/calendar/2026/11",
        f"{TRAPS}/calendar/2027/01",
        f"{TRAPS}/calendar?date=2026-12-01&view=day",
    ]
    day = web.page(f"{TRAPS}/calendar?date=2026-12-31&view=day")
    assert [link.href for link in day.links[:2]] == [
        "?date=2026-12-30&view=day",
        "?date=2027-01-01&view=day",
    ]
    assert f"{TRAPS}/calendar?date=2026-12-31&view=week" in {link.url for link in day.links}


def test_search_and_loop_traps_grow(web: SyntheticWeb) -> None:
    page = web.page(f"{TRAPS}/search?a=1&b=2")
    assert [link.url for link in page.links] == [
        f"{TRAPS}/search?a=2&b=2",
        f"{TRAPS}/search?a=1&b=3",
        f"{TRAPS}/search?a=1&b=2&c=1",
    ]
    frontier, seen = [f"{TRAPS}/search?a=1"], set()
    for _ in range(4):
        frontier = [link.url for url in frontier for link in web.page(url).links]
        seen.update(frontier)
    assert len(seen) >= 30  # one more, or one different, parameter at each hop
    url = f"{TRAPS}/loop/sub/"
    for depth in range(2, 40):
        page = web.page(url)
        assert page.links[0].href == "sub/"
        url = page.links[0].url
        assert url == f"{TRAPS}/loop/" + "sub/" * depth
    assert canonical_url("sub/", f"{TRAPS}/loop/sub/") == f"{TRAPS}/loop/sub/sub/"


@pytest.mark.parametrize(
    "path",
    [
        "/calendar/2026/13",
        "/calendar/2026/1",
        "/calendar/0000/01",
        "/calendar?date=2026-02-30&view=day",
        "/calendar?view=day&date=2026-02-01",
        "/search?b=1",
        "/search?a=0",
        "/search?a=1&a=2",
        "/loop/sub",
        "/loop/other/",
        "/p/1",
    ],
)
def test_trap_host_answers_404_off_its_spaces(web: SyntheticWeb, path: str) -> None:
    assert web.status(TRAPS + path) == 404
    assert is_trap(TRAPS + path)


def test_trap_host_has_no_page_list(web: SyntheticWeb) -> None:
    with pytest.raises(ValueError, match="infinitely"):
        web.pages(TRAP_HOST)


# -- the link farm ------------------------------------------------------------------------------


def test_farm_is_dense_and_closed(web: SyntheticWeb) -> None:
    hosts = web.policy_host_names()[1:]
    assert hosts == [f"s{i}.{FARM_DOMAIN}" for i in range(PROFILE.farm_hosts)]
    for host in hosts:
        assert web.robots_rules(host).status == 200
        assert web.robots_rules(host).allowed("/f/3", TOKEN)
        pages = web.pages(host)
        assert len(pages) == PROFILE.farm_pages_per_host
        for page in pages:
            assert is_farm(page.url)
            assert len(page.links) >= PROFILE.farm_links_per_page
            assert all(is_farm(link.url) for link in page.links)
    # Every farm page is reachable from the farm's entry points.
    seen = set(web.farm_entry_points())
    queue = list(seen)
    while queue:
        for link in web.page(queue.pop()).links:
            if link.url not in seen:
                seen.add(link.url)
                queue.append(link.url)
    assert len(seen) == PROFILE.farm_hosts * PROFILE.farm_pages_per_host
    assert web.status(f"http://s{PROFILE.farm_hosts}.{FARM_DOMAIN}/") == 502
    assert web.status(f"http://{hosts[0]}/f/{PROFILE.farm_pages_per_host}") == 404


def test_normal_web_links_to_the_farm_only_twice(web: SyntheticWeb) -> None:
    links = [
        (page.url, link.url)
        for page in _normal_pages(web)
        for link in page.links
        if link.url and is_farm(link.url)
    ]
    assert len(links) == 2
    assert {target for _, target in links} == web.farm_entry_points()
    assert len({split_url(source)[0] for source, _ in links}) == 2
    for url in (f"http://s0.{FARM_DOMAIN}/f/3", "HTTP://S3.FARM-SPAM.TEST:80/"):
        assert is_farm(url)
        assert not is_trap(url)
    assert not is_farm(f"http://s0.{FARM_DOMAIN}/robots.txt")
    assert not is_farm("http://h0.synth.test/f/3")


# -- ground truth -------------------------------------------------------------------------------


def test_ground_truth_excludes_traps_and_farm(web: SyntheticWeb) -> None:
    expected = web.expected_crawl(["http://h0.synth.test/"], TOKEN)
    policy = expected.policy
    assert policy is not None
    assert policy.variants
    assert policy.trap_entries == web.trap_entry_points()
    assert f"http://s0.{FARM_DOMAIN}/" in policy.farm_entries
    assert policy.farm_entries <= web.farm_entry_points()
    assert policy.robots[TRAP_HOST] == 200
    assert {f"s{i}.{FARM_DOMAIN}" for i in range(PROFILE.farm_hosts)} <= set(policy.robots)
    assert not set(policy.robots) & set(expected.robots)
    for url in list(expected.fetch) + list(expected.never):
        assert not is_trap(url), url
        assert not is_farm(url), url
        assert page_identity(url) == url
    home = "http://h0.synth.test"
    assert expected.fetch[f"{home}/caf%C3%A9/20"] == 200
    assert expected.fetch[f"{home}/catalog?item=21&lang=en"] == 200
    assert f"{home}/private/14" in expected.never
    all_seeds = web.expected_crawl(web.seeds(), TOKEN)
    assert all_seeds.policy.farm_entries == web.farm_entry_points()


def test_ground_truth_of_the_normal_web_is_unchanged_without_variants() -> None:
    plain = SyntheticWeb(SMALL).expected_crawl(SyntheticWeb(SMALL).seeds(), TOKEN)
    config = dataclasses.replace(SMALL, traps=True, farm_hosts=4, popular_pages=3)
    profiled = SyntheticWeb(config).expected_crawl(SyntheticWeb(config).seeds(), TOKEN)
    assert profiled.fetch == plain.fetch
    assert profiled.never == plain.never
    assert profiled.robots == plain.robots
    assert profiled.redirects == plain.redirects
    assert profiled.policy.trap_entries
    assert profiled.policy.farm_entries


def test_in_links_count_distinct_other_hosts(web: SyntheticWeb) -> None:
    sources: dict[str, set[str]] = collections.defaultdict(set)
    for page in _normal_pages(web):
        host = split_url(page.url)[0]
        for link in page.links:
            if link.url and split_url(link.url)[0] != host:
                sources[link.url].add(host)
    for url, hosts in sources.items():
        assert web.in_links(url) == len(hosts)
    assert web.in_links("http://h0.synth.test/nowhere") == 0
    assert web.in_links("HTTP://H0.SYNTH.TEST:80/%70/1") == web.in_links("http://h0.synth.test/p/1")
    expected = web.expected_crawl(web.seeds(), TOKEN)
    assert set(expected.policy.in_links) == set(expected.fetch)
    for url, count in expected.policy.in_links.items():
        assert count <= web.in_links(url)


def test_popular_pages_skew_the_in_degree(web: SyntheticWeb) -> None:
    popular = web.popular_pages()
    assert len(popular) == PROFILE.popular_pages
    counts = [web.in_links(url) for url in popular]
    others = [web.in_links(page.url) for page in _normal_pages(web) if page.url not in set(popular)]
    half = len(counts) // 2
    assert sum(counts[:half]) / half > sum(counts[half:]) / (len(counts) - half)
    assert counts[0] >= 0.7 * (PROFILE.hosts - 1)
    assert counts[0] > sorted(others)[int(0.9 * len(others))]
    expected = web.expected_crawl(web.seeds(), TOKEN)
    assert expected.policy.popular == tuple(popular)
    assert all(url in expected.fetch for url in popular)
    plain = SyntheticWeb(dataclasses.replace(PROFILE, popular_pages=0))
    assert plain.popular_pages() == []


# -- audit --------------------------------------------------------------------------------------


def _model_crawl(
    web: SyntheticWeb,
    seeds: list[str],
    resolve: Callable[[str, str | None], str | None],
    bound: int,
) -> list[RequestRecord]:
    """A sequential crawl of the model writing the log the server would: ``resolve`` is the
    crawler's link resolver and normaliser; at most ``bound`` requests per trap area and to the
    farm. Robots.txt is obeyed on the URL as the crawler spells it."""
    records: list[RequestRecord] = []
    robots: dict[str, object] = {}
    bounded: collections.Counter[str] = collections.Counter()
    seen: set[str] = set()
    queue: collections.deque[str] = collections.deque()

    def discover(url: str | None) -> None:
        if url and url not in seen:
            seen.add(url)
            queue.append(url)

    def request(host: str, path: str) -> int:
        start = 1000.0 + len(records)
        status = web.respond(host, path).status
        records.append(RequestRecord(start, start + 0.01, host, path, "GET", status, 1, TOKEN))
        return status

    for seed in seeds:
        discover(resolve(seed, None))
    while queue:
        url = queue.popleft()
        host, path = split_url(url)
        key = trap_area(url) or ("farm" if is_farm(url) else None)
        if key:
            if bounded[key] >= bound:
                continue
            bounded[key] += 1
        if host not in robots:
            request(host, "/robots.txt")
            robots[host] = web.robots_rules(host)
        if not robots[host].allowed(path, TOKEN):
            continue
        status = request(host, path)
        page = web.page(page_identity(url))
        if page is None:
            continue
        if page.location is not None:
            discover(resolve(page.location, url))
        elif status == 200 and page.content_type.startswith("text/html"):
            for link in page.links:
                discover(resolve(link.href, url))
    return records


def test_audit_accepts_a_crawler_with_the_policy(web: SyntheticWeb) -> None:
    seeds = web.seeds(4)
    expected = web.expected_crawl(seeds, TOKEN)
    records = _model_crawl(web, seeds, page_identity, bound=5)
    assert audit_log(records, expected, min_delay=0.5) == []
    report = audit_policy(records)
    assert report.problems(max_trap_requests=15, max_farm_requests=5) == []
    assert report.trap_requests == {"calendar": 5, "search": 5, "loop": 5}
    assert report.farm_total == 5
    assert report.respelled() == {}
    assert report.repeated() == {}
    assert report.noncanonical() == []
    assert report.page_requests == len(expected.fetch) + 20
    assert report.problems(max_trap_requests=10, max_farm_requests=4) == [
        "15 trap requests, more than 10 ({'calendar': 5, 'loop': 5, 'search': 5})",
        f"5 farm requests of {report.page_requests}, more than 4",
    ]


def test_audit_catches_a_crawler_without_the_policy(web: SyntheticWeb) -> None:
    seeds = web.seeds(4)
    expected = web.expected_crawl(seeds, TOKEN)
    records = _model_crawl(web, seeds, canonical_url, bound=5)
    problems = "\n".join(audit_log(records, expected, min_delay=0.5))
    assert re.search(r"http://h0\.synth\.test/p/1: requested \d+ times \(as .*/%70/1", problems)
    assert "requested but disallowed" in problems  # robots.txt checked on a non-canonical path
    report = audit_policy(records)
    assert "http://h0.synth.test/p/1" in report.respelled()
    assert any(";jsessionid=" in url.lower() for url in report.noncanonical())
    assert any("/../" in url for url in report.noncanonical())
    lines = report.problems()
    assert any("spellings" in line for line in lines)
    assert any("non-canonical spelling" in line for line in lines)


def test_audit_flags_repeats_and_unreachable_bounded_urls() -> None:
    no_traps = SyntheticWeb(dataclasses.replace(PROFILE, traps=False))
    expected = no_traps.expected_crawl(no_traps.seeds(), TOKEN)
    assert not expected.policy.trap_entries
    calendar = RequestRecord(1.0, 1.1, TRAP_HOST, "/calendar/2026/12", "GET", 200, 1, TOKEN)
    robots = RequestRecord(0.0, 0.1, TRAP_HOST, "/robots.txt", "GET", 200, 1, TOKEN)
    again = dataclasses.replace(calendar, start=3.0, end=3.1, path="/calendar/2026/12?sid=1")
    problems = audit_log([robots, calendar, again], expected, complete=False)
    assert f"{TRAPS}/robots.txt: robots.txt of a host the crawl never needed" in problems
    assert f"{TRAPS}/calendar/2026/12: requested but not reachable in the ground truth" in problems
    assert any(
        line.startswith(f"{TRAPS}/calendar/2026/12: requested 2 times (as ") for line in problems
    )


# -- through the server -------------------------------------------------------------------------


def test_server_serves_spellings_traps_and_farm(tmp_path: Path) -> None:
    config = dataclasses.replace(PROFILE, hosts=4, farm_hosts=3, farm_pages_per_host=10)
    with SyntheticWebServer(config, tmp_path / "requests.jsonl", flush_interval=0.1) as server:
        web = server.web
        host, port = server.proxy_url.removeprefix("http://").rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=10)

        def get(url: str) -> tuple[int, bytes]:
            connection.request("GET", url, headers={"User-Agent": f"{TOKEN}/test"})
            response = connection.getresponse()
            return response.status, response.read()

        try:
            page = "http://h0.synth.test/p/1"
            cafe = next(p.url for p in web.pages("h0.synth.test") if "caf%C3%A9" in p.url)
            spellings = web.spellings(page) + [
                "HTTP://H0.Synth.Test:80/./%70/1;jsessionid=ABC?SID=1",
                "http://h0.synth.test/x/../p/1",
                "http://h0.synth.test/p/1?PHPSESSID=0a1b",
            ]
            for url in spellings:
                assert get(url.partition("#")[0]) == (200, web.body(page)), url
            assert get(cafe.replace("%C3%A9", "%c3%a9")) == (200, web.body(cafe))
            for host_name in ("s0", "s2"):
                status, body = get(f"http://{host_name}.{FARM_DOMAIN}/robots.txt")
                assert (status, body) == (200, web.robots_rules(f"{host_name}.{FARM_DOMAIN}").body)
                url = f"http://{host_name}.{FARM_DOMAIN}/f/3"
                assert get(url) == (200, web.body(url))
            assert get(f"http://s3.{FARM_DOMAIN}/")[0] == 502
            calendar = f"{TRAPS}/calendar/2026/12"
            assert get(calendar) == (200, web.body(calendar))
            assert get(f"{TRAPS}/robots.txt")[0] == 200
        finally:
            connection.close()
        records = server.request_log()
    report = audit_policy(records)
    assert len(report.spellings[page]) >= len(VARIANT_FORMS) - 2
    assert report.requests[page] == len(spellings)
    assert report.farm_requests == {
        f"s0.{FARM_DOMAIN}": 1,
        f"s2.{FARM_DOMAIN}": 1,
        f"s3.{FARM_DOMAIN}": 1,
    }
    assert report.trap_requests == {"calendar": 1}
    assert "/%70/1" in {r.path for r in records}
