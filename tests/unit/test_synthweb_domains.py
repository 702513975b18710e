"""Tests of the synthetic web's multi-domain profile (:mod:`synthweb.domains`): sites on many
registered domains, link farms, endless spaces on real sites, soft 404s and the ground truth.

The last test crawls the web over HTTP with a small reference crawler (Beautiful Soup) that
follows real pages only, and checks the truth's reachable pages and in-degrees against what the
server really sent.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import http.client
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import bs4
import pytest

from synthweb import SyntheticWeb, SyntheticWebServer, WebConfig, audit_log, canonical_url
from synthweb.domains import UrlKind
from synthweb.urls import split_url
from tests.fakes.synthweb import SMALL, SMALL_DIGEST, web_digest

TOKEN = "pyflink-crawler"
CONFIG = WebConfig(seed=3, hosts=80).with_multi_domain_profile()
#: Small enough to crawl over HTTP in a few seconds, with every feature on.
TINY = WebConfig(seed=5, hosts=14).with_multi_domain_profile(multi_domain_largest_host=60)


@pytest.fixture(scope="module")
def web() -> SyntheticWeb:
    return SyntheticWeb(CONFIG)


@pytest.fixture(scope="module")
def truth(web: SyntheticWeb):  # noqa: ANN201 - an ExpectedCrawl
    return web.expected_crawl(web.seeds(), TOKEN)


def _domain(host: str) -> str:
    return ".".join(host.split(".")[-2:])


def _links(web: SyntheticWeb, url: str) -> list[str]:
    page = web.page(url)
    assert page is not None, url
    return [link.url for link in page.links if link.url]


def _fingerprint(web: SyntheticWeb) -> str:
    sha = hashlib.sha256()
    for host in web.host_names():
        sha.update(web.robots_rules(host).body)
        for page in web.pages(host):
            sha.update(repr(page).encode())
            sha.update(web.body(page.url))
    domains = web.expected_crawl(web.seeds()).domains
    assert domains is not None
    sha.update(json.dumps(sorted(domains.in_degree.items())).encode())
    return sha.hexdigest()


# -- configuration and determinism ----------------------------------------------------------


def test_off_by_default_and_the_other_layouts_unchanged() -> None:
    assert not WebConfig().multi_domain
    assert SyntheticWeb(SMALL).domains is None
    assert web_digest(SyntheticWeb(SMALL)) == SMALL_DIGEST
    with pytest.raises(ValueError, match="needs the multi-domain profile"):
        SyntheticWeb(SMALL).url_kind("http://h0.synth.test/")


def test_it_is_a_layout_of_its_own() -> None:
    with pytest.raises(ValueError, match="layout of its own"):
        WebConfig().with_url_policy_profile().with_multi_domain_profile()
    with pytest.raises(ValueError, match="multi_domain_farm_clusters"):
        WebConfig().with_multi_domain_profile(multi_domain_farm_clusters=0)
    assert WebConfig.from_json(CONFIG.to_json()) == CONFIG


def test_same_seed_same_web_and_another_seed_another() -> None:
    assert _fingerprint(SyntheticWeb(TINY)) == _fingerprint(SyntheticWeb(TINY))
    other = dataclasses.replace(TINY, seed=TINY.seed + 1)
    assert _fingerprint(SyntheticWeb(TINY)) != _fingerprint(SyntheticWeb(other))


def test_same_web_in_another_process_with_another_hash_seed() -> None:
    code = (
        "from synthweb import SyntheticWeb, WebConfig\n"
        "from tests.unit.test_synthweb_domains import _fingerprint\n"
        f"print(_fingerprint(SyntheticWeb(WebConfig.from_json({TINY.to_json()!r}))))"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONHASHSEED": "4242", "PYTHONPATH": str(root)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, cwd=root, check=True, timeout=120)
    assert result.stdout.strip() == _fingerprint(SyntheticWeb(TINY))


# -- sites ----------------------------------------------------------------------------------


def test_hosts_live_on_many_registered_domains(web: SyntheticWeb) -> None:
    hosts = web.host_names()
    assert len(hosts) == CONFIG.hosts
    per_domain = collections.Counter(_domain(host) for host in hosts)
    assert len(per_domain) >= 0.7 * len(hosts)
    assert 3 <= sum(1 for count in per_domain.values() if count > 1) <= 0.3 * len(per_domain)
    assert {host.split(".")[0] for host in hosts} >= {"www", "blog", "shop"}
    assert not any(host.endswith("synth.test") for host in hosts)


def test_sites_of_very_different_sizes_with_shared_url_shapes(web: SyntheticWeb) -> None:
    sizes = sorted((len(web.pages(host)) for host in web.host_names()), reverse=True)
    assert sizes[0] >= 800
    assert sizes[0] >= 20 * sizes[len(sizes) // 2]
    assert sizes[-1] <= 12
    biggest_site = collections.Counter()
    for host in web.host_names():
        biggest_site[_domain(host)] += len(web.pages(host))
    assert max(biggest_site.values()) >= 1500
    paths = [split_url(p.url)[1] for p in web.pages(web.host_names()[0])]
    shapes = collections.Counter(path.rsplit("/", 1)[0] for path in paths)
    assert shapes.most_common(1)[0][1] >= 100


def test_every_real_page_has_the_site_navigation(web: SyntheticWeb) -> None:
    domains = web.domains
    assert domains is not None
    for host in web.host_names()[:10]:
        pages = web.pages(host)
        home = f"http://{host}/"
        sections = [f"http://{host}{s.index_path(1)}" for s in domains.plan(host).sections]
        for page in pages:
            targets = {link.url for link in page.links}
            assert home in targets, page.url
            assert set(sections) <= targets, page.url


def test_in_degree_is_skewed_and_cross_site_links_go_to_homes(web: SyntheticWeb, truth) -> None:
    degrees = sorted(truth.domains.in_degree.values(), reverse=True)
    assert degrees[0] >= 50 * degrees[len(degrees) // 2]
    external = collections.Counter()
    for url in list(truth.domains.reachable)[:3000]:
        source = _domain(split_url(url)[0])
        for target in _links(web, url):
            if _domain(split_url(target)[0]) != source and web.url_kind(target) is UrlKind.PAGE:
                external["home" if split_url(target)[1] == "/" else "deeper"] += 1
    assert external["home"] > external["deeper"] > 0


def test_links_resolve_to_the_urls_the_model_names(web: SyntheticWeb) -> None:
    rng = random.Random(1)
    urls = rng.sample(sorted(web.domains.legit_urls()), 300)
    for url in urls:
        page = web.page(url)
        assert page is not None
        for link in page.links:
            assert canonical_url(link.href, url) == link.url, (url, link)


# -- junk -----------------------------------------------------------------------------------


def test_link_farms_span_many_domains_and_are_linked_once_each(web: SyntheticWeb) -> None:
    domains = web.domains
    farms = domains.farm_host_names()
    assert len(farms) >= 8
    farm_domains = {_domain(host) for host in farms}
    assert len(farm_domains) >= 4
    assert len(farm_domains) < len(farms)
    assert not farm_domains & {_domain(host) for host in web.host_names()}
    entries = domains.farm_entries()
    linked = collections.Counter(split_url(u)[0] for urls in entries.values() for u in urls)
    assert linked == collections.Counter(farms)
    assert len({_domain(split_url(page)[0]) for page in entries}) >= len(farms) // 2
    real_links = collections.Counter()
    for url in domains.legit_urls():
        for target in _links(web, url):
            if web.url_kind(target) is UrlKind.FARM:
                real_links[split_url(target)[0]] += 1
    assert real_links == linked


def test_farm_pages_link_densely_and_have_no_end(web: SyntheticWeb) -> None:
    farm = web.domains.farm_host_names()[0]
    page = f"http://{farm}/any/path-{random.Random(2).randint(1, 10**9)}.html"
    assert web.status(page) == 200
    assert web.url_kind(page) is UrlKind.FARM
    links = _links(web, page)
    assert len(links) >= 25
    kinds = collections.Counter(web.url_kind(u) for u in links)
    assert kinds[UrlKind.FARM] >= 0.9 * len(links)
    assert len({split_url(u)[0] for u in links}) >= 2
    assert len(_walk(web, page, UrlKind.FARM, 3)) > 1000


def _trap_host(web: SyntheticWeb, trap: str) -> str:
    return next(h for h in web.host_names() if trap in web.domains.plan(h).traps)


def _entries(truth, kind: UrlKind) -> list[str]:
    return sorted(u for u, k in truth.domains.junk_entries.items() if k is kind)


def test_endless_spaces_are_on_real_sites(web: SyntheticWeb, truth) -> None:
    for trap in ("calendar", "session", "repeat-path", "params"):
        host = _trap_host(web, trap)
        assert len(web.pages(host)) >= 20
        assert f"http://{host}/" in truth.domains.reachable
    for kind in (UrlKind.CALENDAR, UrlKind.SESSION, UrlKind.REPEAT_PATH, UrlKind.PARAMS,
                 UrlKind.FARM, UrlKind.SOFT_404):
        assert _entries(truth, kind), kind


def _walk(web: SyntheticWeb, start: str, kind: UrlKind, steps: int) -> set[str]:
    """URLs of ``kind`` found breadth first from ``start``, ``steps`` levels deep."""
    frontier, seen = [start], {start}
    for _ in range(steps):
        found = {u for url in frontier for u in _links(web, url) if web.url_kind(u) is kind}
        frontier = sorted(found - seen)
        seen.update(frontier)
    return seen


def test_the_calendar_has_no_end_and_leads_to_past_events(web: SyntheticWeb, truth) -> None:
    host = _trap_host(web, "calendar")
    entry = _entries(truth, UrlKind.CALENDAR)[0]
    month = entry
    for _ in range(40):
        month = next(u for u in _links(web, month) if web.url_kind(u) is UrlKind.CALENDAR
                     and u.count("/") == 6 and u > month)
    assert month.startswith(f"http://{host}/calendar/20")
    events = {u for day in _walk(web, entry, UrlKind.CALENDAR, 2) for u in _links(web, day)
              if "/events/" in u}
    past = events & truth.domains.unreachable
    assert past
    assert events - past
    assert all(web.url_kind(u) is UrlKind.PAGE for u in past)


def test_every_session_page_view_gives_new_urls(web: SyntheticWeb, truth) -> None:
    entries = _entries(truth, UrlKind.SESSION)
    assert len(entries) >= 10
    assert all("?visit=" in u for u in entries)
    first, second = (set(_links(web, u)) for u in entries[:2])
    inside = {u for u in first | second if web.url_kind(u) is UrlKind.SESSION}
    assert len(inside) >= 10
    assert not (first & second & inside)
    assert len(_walk(web, entries[0], UrlKind.SESSION, 2)) > 200
    page = web.page(entries[0])
    assert web.body(entries[0])
    assert page is not None
    assert page.status == 200


def test_the_repeating_path_grows_without_end(web: SyntheticWeb, truth) -> None:
    entry = _entries(truth, UrlKind.REPEAT_PATH)[0]
    assert entry.endswith("/support/faq/support/faq/")
    deepest = max(_walk(web, entry, UrlKind.REPEAT_PATH, 12), key=len)
    assert deepest.count("support/faq/") >= 6
    assert web.status(deepest) == 200


def test_filter_combinations_multiply(web: SyntheticWeb, truth) -> None:
    entries = _entries(truth, UrlKind.PARAMS)
    assert len(entries) >= 20
    found = _walk(web, entries[0], UrlKind.PARAMS, 2)
    assert len(found) > 500
    orders = {tuple(sorted(u.partition("?")[2].split("&"))) for u in found}
    assert len(orders) < len(found)  # the same filters in another order: another URL


def test_soft_404_hosts_answer_200_with_navigation(web: SyntheticWeb, truth) -> None:
    soft = [h for h in web.host_names() if web.domains.plan(h).soft_404]
    assert len(soft) == CONFIG.multi_domain_soft_404_hosts
    for host in soft:
        url = f"http://{host}/no/such/page-{host}.html"
        assert web.status(url) == 200
        assert web.url_kind(url) is UrlKind.SOFT_404
        assert f"http://{host}/" in _links(web, url)
        assert b"not found" in web.body(url).lower()
    normal = next(h for h in web.host_names() if not web.domains.plan(h).soft_404)
    assert web.status(f"http://{normal}/no/such/page.html") == 404
    dead_into_soft = _entries(truth, UrlKind.SOFT_404)
    assert len({split_url(u)[0] for u in dead_into_soft}) >= 2


# -- ground truth ---------------------------------------------------------------------------


def test_ground_truth_is_consistent(web: SyntheticWeb, truth) -> None:
    domains = truth.domains
    legit = set(web.domains.legit_urls())
    assert domains.reachable <= legit
    assert domains.reachable | domains.unreachable == legit
    assert len(domains.reachable) >= 0.95 * len(legit)
    assert all(web.url_kind(u) is UrlKind.PAGE for u in domains.reachable)
    assert all(kind.is_junk and web.url_kind(u) is kind for u, kind in domains.junk_entries.items())
    assert not any(web.url_kind(u).is_junk for u in truth.fetch)
    assert set(web.seeds()) <= domains.reachable
    assert set(domains.in_degree) == domains.reachable
    # In-degree recounted from the pages themselves.
    counted = collections.Counter()
    for url in domains.reachable:
        for target in set(_links(web, url)) - {url}:
            counted[truth.redirects.get(target, target)] += 1
    assert {u: counted[u] for u in domains.reachable} == dict(domains.in_degree)
    assert domains.best_mean_in_degree(100) >= domains.mean_in_degree(domains.reachable)
    everywhere = domains.mean_in_degree(domains.reachable, domains=True)
    assert domains.best_mean_in_degree(100, domains=True) > 2 * everywhere > 0


# -- a reference crawl over HTTP ------------------------------------------------------------


def _crawl_real_pages(server: SyntheticWebServer, seeds: list[str]) -> dict[str, set[str]]:
    """Breadth first over HTTP, following 200 pages of kind PAGE and redirects only; every URL
    found is requested once (junk too, not followed). Returns page -> links parsed."""
    host, port = server.proxy_url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    web = server.web
    robots: set[str] = set()
    parsed: dict[str, set[str]] = {}
    seen, queue = set(seeds), collections.deque(seeds)
    while queue:
        url = queue.popleft()
        site = split_url(url)[0]
        if site not in robots:
            robots.add(site)
            connection.request("GET", f"http://{site}/robots.txt", headers={"User-Agent": TOKEN})
            connection.getresponse().read()
        if not web.robots_rules(site).allowed(split_url(url)[1], TOKEN):
            continue
        connection.request("GET", url, headers={"User-Agent": TOKEN})
        response = connection.getresponse()
        body = response.read()
        found: set[str] = set()
        if response.status == 301:
            found.add(canonical_url(response.getheader("Location"), url))
        elif response.status == 200 and web.url_kind(url) is UrlKind.PAGE:
            soup = bs4.BeautifulSoup(body, "lxml")
            found = {canonical_url(a["href"], url) for a in soup.find_all("a", href=True)}
            parsed[url] = found
        for target in found:
            if target and target not in seen:
                seen.add(target)
                queue.append(target)
    connection.close()
    return parsed


def test_reference_crawl_finds_the_reachable_real_pages(tmp_path: Path) -> None:
    with SyntheticWebServer(TINY, tmp_path / "requests.jsonl") as server:
        seeds = server.web.seeds()
        parsed = _crawl_real_pages(server, seeds)
        records = server.request_log()
    web = server.web
    expected = web.expected_crawl(seeds, TOKEN)
    domains = expected.domains
    assert len(domains.reachable) > 150
    assert set(parsed) == domains.reachable
    counted = collections.Counter()
    for url, targets in parsed.items():
        for target in targets - {url}:
            counted[expected.redirects.get(target, target)] += 1
    assert {u: counted[u] for u in domains.reachable} == dict(domains.in_degree)
    junk = [r for r in records if web.url_kind(r.url).is_junk]
    assert {web.url_kind(r.url) for r in junk} == set(UrlKind) & {k for k in UrlKind if k.is_junk}
    assert all(r.status == 200 for r in junk)
    assert audit_log(records, expected) == []
