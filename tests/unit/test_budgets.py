"""Budgets of the crawl DB: URL shapes, domain budgets that grow with the support of other
domains (not of domains they link back to), shape budgets that grow with good pages as far
as their URLs are novel, trials, and the crawl DB deferring what is over budget instead of
dropping it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from crawl.config import AdmissionSection, CrawlDbSection, PrioritySection
from crawl.crawldb.budgets import UNLIMITED, Budgets, CachedStore, MemoryStore, shape_key
from crawl.crawldb.partition import CrawlDbPartition
from crawl.fetch_requests import decode_entries
from crawl.progress import CrawlFigures, is_idle
from crawl.stages import CRAWLDB_PENDING, FETCH_TIMERS
from crawl.urls.priority import CashLevel
from crawl.urls.shapes import url_shape
from drum import host_key

T0 = 1_700_000_000_000
SECTION = AdmissionSection(domain_base_urls=2, domain_urls_per_linking_domain=3,
                           max_linking_domains=2, shape_base_urls=2,
                           shape_urls_per_good_page=1.0, trial_pages=0)


@pytest.mark.parametrize(
    ("url", "shape"),
    [
        ("http://a.org/", "/"),
        ("http://a.org/shop/item-17.html", "/shop/item-#.html"),
        ("http://a.org/p/v2/item-17.html", "/p/v#/item-#.html"),
        # Segments of digits alone in a row are one: a calendar's months and days.
        ("http://a.org/calendar/2026/12", "/calendar/#"),
        ("http://a.org/calendar/2027/01/", "/calendar/#"),
        ("http://a.org/calendar/2027/01/05/", "/calendar/#"),
        ("http://a.org/2015/03/05/a-post/", "/#/a-post"),
        ("http://a.org/x/12a/3/", "/x/#a/#"),
        # Any query on one section: one shape (a listing's filters in every combination)...
        ("http://a.org/shop/?colour=red&sort=price", "/shop?"),
        ("http://a.org/shop/?size=xl", "/shop?"),
        ("http://a.org/cal?view=week&date=2026-12-01", "/cal?"),
        # ...and on one section's pages (a session id).
        ("http://a.org/news/3.html?visit=0f3a", "/news?"),
        ("http://a.org/news/a-walk.html?visit=77c1", "/news?"),
        ("http://a.org/about.html?visit=0f3a", "/about.html?"),
        ("http://a.org/?visit=0f3a", "/?"),
    ],
)
def test_url_shape(url: str, shape: str) -> None:
    assert url_shape(url) == shape


def _room(budgets: Budgets, host: str) -> int:
    (group,) = budgets.groups(np.array([host_key(host)], dtype=np.uint32)).tolist()
    (room,) = budgets.group_limits(np.array([group])).tolist()
    return room


def test_a_domain_budget_grows_with_the_domains_that_link_to_it_but_not_back() -> None:
    budgets = Budgets(MemoryStore(), SECTION)
    farm = [f"http://s{i % 4}.farm.test/p/{i}" for i in range(8)]
    # Links inside the domain (between its own hosts) lend no support.
    budgets.saw_found([(farm[1], "L", farm[0]), (farm[2], "L", farm[5])])
    assert _room(budgets, "s1.farm.test") == 2
    # Two other domains link to it: 2 + 2 x 3 = 8, each host of it drawing on that one budget.
    budgets.saw_found([(farm[0], "L", "http://a.org/x"), (farm[3], "L", "http://b.net/")])
    assert _room(budgets, "s2.farm.test") == 8
    budgets.released(np.array([host_key("s0.farm.test"), host_key("s3.farm.test")]),
                     np.zeros(2, dtype=np.uint32))
    assert _room(budgets, "s1.farm.test") == 6
    # It links back to b.net: b.net's support is taken back (they link each other)...
    budgets.saw_outlinks("farm.test", ["b.net", "farm.test"])
    assert _room(budgets, "s1.farm.test") == 3
    # ...and c.net, which it links first, lends none when it links to it later.
    budgets.saw_outlinks("farm.test", ["c.net"])
    budgets.saw_found([(farm[4], "L", "http://c.net/")])
    assert _room(budgets, "s1.farm.test") == 3
    # At most max_linking_domains count.
    budgets.saw_found([(farm[4], "L", f"http://d{i}.net/") for i in range(5)])
    assert _room(budgets, "s1.farm.test") == 2 + 2 * 3 - 2


def test_seeds_domains_and_unknown_hosts_have_no_budget() -> None:
    budgets = Budgets(MemoryStore(), SECTION)
    budgets.saw_found([("http://www.a.org/", "", "")])
    assert _room(budgets, "shop.a.org") == UNLIMITED  # (a host not seen yet: no domain known)
    budgets.saw_found([("http://shop.a.org/x", "L", "http://www.a.org/")])
    assert _room(budgets, "shop.a.org") == UNLIMITED
    assert _room(budgets, "never.seen.example") == UNLIMITED
    strict = Budgets(MemoryStore(), dataclasses.replace(SECTION, seed_domains_unbudgeted=False))
    strict.saw_found([("http://a.org/", "", "")])
    assert _room(strict, "a.org") == 2


def _shape_room(budgets: Budgets, url: str) -> int:
    host = host_key(url.split("/")[2])
    (room,) = budgets.shape_limits(np.array([host], dtype=np.uint32),
                                   np.array([shape_key(url)], dtype=np.uint32)).tolist()
    return room


def _release(budgets: Budgets, *urls: str) -> None:
    budgets.released(np.array([host_key(url.split("/")[2]) for url in urls], dtype=np.uint32),
                     np.array([shape_key(url) for url in urls], dtype=np.uint32))


def _release(budgets: Budgets, *urls: str) -> None:
    budgets.released(np.array([host_key(url.split("/")[2]) for url in urls], dtype=np.uint32),
                     np.array([shape_key(url) for url in urls], dtype=np.uint32))


def test_a_shape_budget_grows_with_its_good_pages_only() -> None:
    budgets = Budgets(MemoryStore(), SECTION)
    items = [f"http://a.org/item-{i}.html" for i in range(10)]
    days = [f"http://a.org/cal?day={i}" for i in range(10)]
    for url in items + days:
        budgets.saw_new(url)
    assert _shape_room(budgets, items[0]) == _shape_room(budgets, days[0]) == 2
    _release(budgets, *items[:2], *days[:2])
    assert _shape_room(budgets, items[5]) == 0
    # Items answer 200 with pages of their own: each allows one more.
    budgets.saw_outcome(items[0], "FETCHED", 200, "")
    budgets.saw_outcome(items[1], "FETCHED", 200, "")
    assert _shape_room(budgets, items[5]) == 2
    # Days are copies (of another URL's page, or near-duplicates), errors, redirects.
    budgets.saw_outcome(days[0], "FETCHED", 200, "duplicate:payload")
    budgets.saw_outcome(days[1], "FETCHED", 200, "")
    budgets.saw_near_duplicate(days[1])
    budgets.saw_outcome(days[2], "HTTP_ERROR", 404, "http:404")
    budgets.saw_outcome(days[3], "REDIRECT", 301, "http:301")
    assert _shape_room(budgets, days[5]) == 0
    assert _shape_room(budgets, "http://b.org/cal?day=1") == 2  # another host: its own


def test_a_shape_whose_first_pages_prove_nothing_stops_at_its_trial() -> None:
    budgets = Budgets(MemoryStore(), dataclasses.replace(SECTION, shape_base_urls=10,
                                                         trial_pages=3))
    copies = [f"http://a.org/item-{i}.html?visit={i:016x}" for i in range(20)]
    for url in copies:
        budgets.saw_new(url)
    assert _shape_room(budgets, copies[0]) == 10
    _release(budgets, *copies[:5])
    budgets.saw_outcome(copies[0], "FETCHED", 200, "duplicate:payload")
    budgets.saw_outcome(copies[1], "FETCHED", 200, "thin:repeated-words")
    budgets.saw_outcome(copies[2], "HTTP_ERROR", 500, "http:500")  # (no page)
    assert _shape_room(budgets, copies[0]) == 5  # two pages, no verdict yet
    budgets.saw_outcome(copies[3], "FETCHED", 200, "")
    budgets.saw_near_duplicate(copies[3])
    assert _shape_room(budgets, copies[0]) == 0  # three pages, none good: no more than three
    # A good page lifts the trial.
    budgets.saw_outcome(copies[4], "FETCHED", 200, "")
    assert _shape_room(budgets, copies[0]) == 10 + 1 - 5
    # Pages of a path's shape are no session id's: a site of short, alike pages (or of dead
    # links) goes on, each answer letting the next one go.
    alike = [f"http://a.org/photo-{i}.html" for i in range(20)]
    for url in alike:
        budgets.saw_new(url)
    _release(budgets, *alike[:10])
    for url in alike[:4]:
        budgets.saw_outcome(url, "FETCHED", 200, "")
        budgets.saw_near_duplicate(url)
    budgets.saw_outcome(alike[4], "HTTP_ERROR", 404, "http:404")
    assert _shape_room(budgets, alike[0]) == 10 + 5 - 10


def test_a_shape_budget_grows_no_further_than_its_novel_urls() -> None:
    """Good pages that only recombine what their shape has shown (a calendar's dates, a
    listing's filters) do not grow it; new numbers and new parameters do."""
    budgets = Budgets(MemoryStore(), SECTION)
    shop = "http://a.org/shop/"
    singles = [f"{shop}?colour={c}" for c in ("red", "blue")] + [f"{shop}?size={s}"
                                                                 for s in ("s", "m")]
    combos = [f"{shop}?colour={c}&size={s}" for c in ("red", "blue") for s in ("s", "m")]
    combos += [f"{shop}?size=s&colour=red&page=1"]
    for url in singles + combos:
        budgets.saw_new(url)
    for url in singles + combos:
        budgets.saw_outcome(url, "FETCHED", 200, "")  # each a page of its own
    # 2 + the five novel URLs: the four singles, and the combination that brought page=1.
    assert budgets.shape_budget(host_key("a.org"), shape_key(shop + "?x=1")) == 2 + 5
    # A calendar's month and day views are one shape; its days recombine the first month's.
    december = [f"http://a.org/calendar/2026/12/{d:02d}/" for d in range(1, 32)]
    january = [f"http://a.org/calendar/2027/01/{d:02d}/" for d in range(1, 32)]
    for url in ["http://a.org/calendar/2026/12/", *december, "http://a.org/calendar/2027/01/",
                *january]:
        budgets.saw_new(url)
        budgets.saw_outcome(url, "FETCHED", 200, "")
    novel = 1 + 31 + 1  # 2026 and 12; each day of December; 2027 and 01
    assert budgets.shape_budget(host_key("a.org"), shape_key(january[0])) == 2 + novel
    # Items: each a new number, each novel; the good pages bind.
    for n in range(40):
        budgets.saw_new(f"http://a.org/item-{n}.html")
    for n in range(10):
        budgets.saw_outcome(f"http://a.org/item-{n}.html", "FETCHED", 200, "")
    assert budgets.shape_budget(host_key("a.org"), shape_key("http://a.org/item-1.html")) == 12
    off = Budgets(MemoryStore(), AdmissionSection(domain_base_urls=0, domain_trial_urls=0,
                                                  shape_base_urls=0))
    assert not off.enabled


def test_a_domain_stays_at_its_trial_until_its_pages_prove_good() -> None:
    """However many domains link to it, a domain gets domain_trial_urls, plus
    domain_urls_per_good_page for each of its pages that proved good, on all its hosts."""
    section = AdmissionSection(domain_base_urls=100, domain_urls_per_linking_domain=100,
                               domain_trial_urls=3, domain_urls_per_good_page=2.0,
                               shape_base_urls=0)
    budgets = Budgets(MemoryStore(), section)
    pages = [f"http://{host}.farm.test/deals-{i}.html" for i in range(6) for host in "ab"]
    budgets.saw_found([(page, "L", f"http://site{n}.org/") for n, page in enumerate(pages)])
    assert _room(budgets, "a.farm.test") == 3
    budgets.released(np.array([host_key("a.farm.test"), host_key("b.farm.test")]),
                     np.zeros(2, dtype=np.uint32))
    assert _room(budgets, "b.farm.test") == 1
    # Copies, near-duplicates and errors prove nothing.
    budgets.saw_outcome(pages[0], "FETCHED", 200, "duplicate:payload")
    budgets.saw_outcome(pages[1], "FETCHED", 200, "")
    budgets.saw_near_duplicate(pages[1])
    budgets.saw_outcome(pages[2], "HTTP_ERROR", 404, "http:404")
    assert _room(budgets, "a.farm.test") == 1
    # A good page of either host: two more for the domain.
    budgets.saw_outcome(pages[3], "FETCHED", 200, "")
    assert _room(budgets, "a.farm.test") == 3
    # The bound by support still holds where it is the smaller.
    tight = Budgets(MemoryStore(), dataclasses.replace(section, domain_base_urls=1,
                                                      domain_urls_per_linking_domain=1))
    tight.saw_found([(pages[0], "L", "http://site0.org/")])
    for _ in range(5):
        tight.saw_outcome(pages[3], "FETCHED", 200, "")
    assert _room(tight, "a.farm.test") == 2
    # The seeds' domains are held to neither.
    budgets.saw_found([("http://www.farm.test/", "", "")])
    assert _room(budgets, "a.farm.test") == UNLIMITED


def test_a_domain_gets_its_trial_pages_until_one_proves_good() -> None:
    section = AdmissionSection(domain_base_urls=0, domain_trial_urls=10, shape_base_urls=0,
                               trial_pages=3)
    budgets = Budgets(MemoryStore(), section)
    pages = [f"http://farm.test/cheap-deals-{i}.html" for i in range(12)]
    budgets.saw_found([(page, "L", "http://a.org/") for page in pages])
    assert _room(budgets, "farm.test") == 3
    budgets.released(np.array([host_key("farm.test")] * 3), np.zeros(3, dtype=np.uint32))
    budgets.saw_outcome(pages[0], "FETCHED", 200, "thin:repeated-words")
    budgets.saw_outcome(pages[1], "FETCHED", 200, "duplicate:payload")
    assert _room(budgets, "farm.test") == 0  # nothing good yet
    # A URL that gave no page (a redirect to follow, a dead link) gives its place back, as
    # far as the trial goes.
    budgets.saw_outcome(pages[2], "REDIRECT", 301, "http:301")
    assert _room(budgets, "farm.test") == 1
    # A soft 404 is a dead link that answered with a page: no page either.
    budgets.saw_outcome(pages[4], "FETCHED", 200, "soft-404")
    assert _room(budgets, "farm.test") == 2
    for _ in range(20):
        budgets.saw_outcome(pages[5], "HTTP_ERROR", 404, "http:404")
    assert _room(budgets, "farm.test") == 10 - 3
    # A good page lifts it: the trial's 10, and 2 for the page.
    budgets.saw_outcome(pages[3], "FETCHED", 200, "")
    assert _room(budgets, "farm.test") == 12 - 3


class _CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.gets = self.puts = 0

    def get(self, key, default=None):
        self.gets += 1
        return super().get(key, default)

    def put(self, key: str, value: int) -> None:
        self.puts += 1
        super().put(key, value)


def test_counters_are_written_back_once_a_flush_and_lookups_of_absent_ones_are_kept() -> None:
    backing = _CountingStore()
    cached = CachedStore(backing, capacity=2)
    for _ in range(5):
        cached.put("a", (cached.get("a") or 0) + 1)
    assert backing == {}  # held until the flush...
    cached.flush()
    assert backing == {"a": 5}
    assert backing.puts == 1  # ...and written once
    cached.flush()
    assert backing.puts == 1  # nothing changed since
    # A counter that is not there is asked of the store once.
    assert cached.get("zzz") is None
    assert cached.get("zzz") is None
    assert backing.gets == 2  # "a" and "zzz"
    # A changed counter pushed out of the full cache is written then, and read back later.
    for key, value in (("b", 7), ("c", 8), ("d", 9)):
        cached.put(key, value)
    assert backing == {"a": 5, "b": 7}  # b pushed out by d
    cached.flush()
    assert backing == {"a": 5, "b": 7, "c": 8, "d": 9}
    assert cached.get("a") == 5  # evicted from the cache, read from the store


def test_the_crawl_db_writes_its_budget_counters_back_at_the_end_of_each_call(
    tmp_path: Path,
) -> None:
    section = dataclasses.replace(CrawlDbSection(), fsync=False)
    backing = _CountingStore()
    budgets = Budgets(CachedStore(backing), AdmissionSection())
    db = CrawlDbPartition(str(tmp_path / "p"), section, budgets=budgets,
                          priority=PrioritySection(host_window=100), timer=_no_time)
    links = [(f"http://a.example/p/{i}", "L", "http://b.example/") for i in range(20)]
    db.apply(links, [], T0, cash=[0.1] * 20)
    assert backing == {}
    db.take_state()  # (the operator stores the partition's state after each call)
    written = dict(backing)
    assert written  # the counters of the domains, their links, the shape...
    assert backing.puts == len(written)  # ...each written once for the 20 links
    # The same counters as without a cache.
    plain = Budgets(MemoryStore(), AdmissionSection())
    plain.saw_found(links)
    assert written == dict(plain._store)


def test_the_crawl_db_defers_what_is_over_budget_and_releases_it_when_the_budget_grows(
    tmp_path: Path,
) -> None:
    section = dataclasses.replace(CrawlDbSection(), fsync=False)
    budgets = Budgets(MemoryStore(), AdmissionSection(domain_base_urls=2,
                                                      domain_urls_per_linking_domain=2,
                                                      shape_base_urls=0, trial_pages=0))
    db = CrawlDbPartition(str(tmp_path / "p"), section, budgets=budgets,
                          priority=PrioritySection(host_window=100), timer=_no_time)
    farm = [(f"http://farm.test/p/{i}", "L", "http://farm.test/") for i in range(6)]
    db.apply(farm, [], T0, cash=[0.6 - i / 10 for i in range(6)])
    answer = db.flush(T0 + 1)
    sent = [item[0] for _, batch in answer.requests for item in decode_entries(batch)]
    assert sent == ["http://farm.test/p/0", "http://farm.test/p/1"]  # best first
    assert db.deferred == {"budget:domain": 4, "budget:shape": 0, "budget:importance": 0}
    assert db.pending == 0  # deferred URLs keep no one busy...
    figures = CrawlFigures(counters={FETCH_TIMERS.key: 1}, gauges={CRAWLDB_PENDING.key: db.pending})
    assert is_idle(figures, quiet_seconds=100, idle_seconds=10)  # ...so a crawl can end
    # Another domain links to it: two more go, best first; nothing was dropped.
    db.apply([("http://farm.test/p/5", "L", "http://news.example/")], [], T0 + 2, cash=[0.0])
    answer = db.flush(T0 + 2000)
    sent = [item[0] for _, batch in answer.requests for item in decode_entries(batch)]
    assert sent == ["http://farm.test/p/2", "http://farm.test/p/3"]
    assert db.deferred["budget:domain"] == 2


def test_the_crawl_db_holds_a_listings_filter_combinations_at_what_they_showed(
    tmp_path: Path,
) -> None:
    section = dataclasses.replace(CrawlDbSection(), fsync=False)
    budgets = Budgets(MemoryStore(), AdmissionSection(domain_base_urls=0, domain_trial_urls=0,
                                                      shape_base_urls=1,
                                                      shape_urls_per_good_page=4.0))
    db = CrawlDbPartition(str(tmp_path / "p"), section, budgets=budgets,
                          priority=PrioritySection(host_window=100), timer=_no_time)
    shop = "http://a.org/shop/"
    singles = [f"{shop}?colour={c}" for c in ("red", "blue", "green")]
    combos = [f"{shop}?colour={c}&size={s}" for c in ("red", "blue", "green") for s in "sml"]
    db.apply([(url, "L", shop) for url in singles], [], T0, cash=[1.0] * 3)
    first = [item[0] for _, batch in db.flush(T0 + 1).requests for item in decode_entries(batch)]
    assert len(first) == 1  # the base
    done = [(url, "FETCHED", 200, "", T0 + 2) for url in first]
    db.apply([(url, "L", first[0]) for url in combos], done, T0 + 2, cash=[0.5] * 9)
    sent = [item[0] for _, batch in db.flush(T0 + 2000).requests
            for item in decode_entries(batch)]
    # One good page and three novel URLs (the combinations are counted as they merge): room
    # for three more, the other singles first (the better ranked).
    assert len(sent) == 3
    assert set(singles) - set(first) <= set(sent)
    done = [(url, "FETCHED", 200, "", T0 + 3) for url in sent]
    db.apply([], done, T0 + 3)
    sent = [item[0] for _, batch in db.flush(T0 + 4000).requests
            for item in decode_entries(batch)]
    # Four good pages would allow sixteen more, but the shape showed six novel URLs (the
    # three colours, and the first combination of each size): 1 + 6 in all, three more now.
    # The rest, combinations of what was shown, wait.
    assert len(sent) == 3
    assert set(sent) <= set(combos)
    assert db.deferred["budget:shape"] == 5
    assert db.pending == 0


def test_the_level_is_the_typical_cash_of_the_pages_fetched_lately() -> None:
    level = CashLevel(window=10, warmup=3)
    for cash in (1.0, 0.0, 100.0):  # (a page without cash is left out)
        level.add(cash)
    assert level.value is None  # not known yet
    level.add(0.01)
    assert level.value == pytest.approx(1.0)  # the geometric mean of 1, 100 and 0.01
    for _ in range(200):
        level.add(1e-6)
    assert level.value == pytest.approx(1e-6, rel=0.01)  # it follows what is fetched now


def test_the_crawl_db_defers_urls_far_below_the_level_of_what_is_fetched(
    tmp_path: Path,
) -> None:
    section = dataclasses.replace(CrawlDbSection(), fsync=False)
    budgets = Budgets(MemoryStore(), AdmissionSection(domain_base_urls=0, shape_base_urls=0))
    db = CrawlDbPartition(str(tmp_path / "p"), section, budgets=budgets,
                          priority=PrioritySection(host_window=100, defer_below=0.01),
                          timer=_no_time)
    found = [("http://a.org/real", "L", "http://b.org/"), ("http://farm.test/1", "L", "http://a/"),
             ("http://farm.test/2", "L", "http://a/")]
    db.apply(found, [], T0, cash=[0.02, 1e-4, 1e-6], level=1.0)
    answer = db.flush(T0 + 1)
    sent = [item[0] for _, batch in answer.requests for item in decode_entries(batch)]
    assert sent == ["http://a.org/real"]
    assert db.deferred["budget:importance"] == 2
    assert db.pending == 0
    # What the crawl fetches comes down to the farm's level: its better page goes.
    for _ in range(60):
        db.apply([], [], T0 + 2, level=0.005)
    db.apply([("http://a.org/next", "L", "http://b.org/")], [], T0 + 3, cash=[0.01])
    answer = db.flush(T0 + 2000)
    sent = [item[0] for _, batch in answer.requests for item in decode_entries(batch)]
    assert sent == ["http://a.org/next", "http://farm.test/1"]
    assert db.deferred["budget:importance"] == 1
    # Off: nothing is held back so.
    loose = CrawlDbPartition(str(tmp_path / "q"), section, budgets=budgets,
                             priority=PrioritySection(host_window=100, defer_below=0.0),
                             timer=_no_time)
    loose.apply(found, [], T0, cash=[0.02, 1e-4, 1e-6], level=1.0)
    sent = [item[0] for _, batch in loose.flush(T0 + 1).requests for item in decode_entries(batch)]
    assert len(sent) == 3
    assert loose.deferred["budget:importance"] == 0


def _no_time() -> float:
    """A release's pass over the DRUM takes no time (on a loaded machine it may take longer
    than the share of ``release_seconds`` a pass may use, and space the releases out)."""
    return 0.0
