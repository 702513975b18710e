"""The multi-domain profile: a web of sites on many registered domains, with the junk of the
real web on it.

``WebConfig(multi_domain=True)`` (:meth:`~synthweb.config.WebConfig.with_multi_domain_profile`)
replaces the ``h{i}.synth.test`` layout with this one; the other profiles cannot be combined
with it. ``WebConfig.hosts`` counts the hosts of real sites. What is served:

- **Real sites** (:mod:`synthweb.sites`): registered domains of one host or several (``www.``,
  ``blog.``, ``shop.``), of very different sizes. Every page carries the site's navigation
  (home, the sections' indexes, about and contact pages, the domain's other hosts). Section
  indexes list their items newest first, paginated, with the section's most popular items
  beside; an item links its neighbours, a few related items (drawn by popularity, a Zipf law
  over a seeded ranking) and now and then a page of another site. Links to other sites go
  mostly to home pages and popular items of hosts drawn by authority; each home page links the
  next site of a seeded cycle (so every site is reachable from any seed) and a few others. Some
  links are dead (``/archive/...``); some name the bare domain of a ``www.`` site, which
  answers 301. robots.txt allows everything (200 or 404), or disallows ``/admin/`` on hosts
  whose navigation has a "Log in" link there.
- **Endless spaces** on real sites (:mod:`synthweb.endless`): a calendar (its entry in the
  site's navigation; day views link real event pages, some of which, past events, nothing but
  the calendar links), session ids in URLs, a repeating relative path, and filter combinations
  on a shop listing.
- **Soft 404s**: on ``soft_404_hosts`` real hosts every unknown path answers 200 with a "not
  found" page carrying the site's navigation; dead links of their own and of other sites point
  into them.
- **Link farms**: hosts on registered domains of their own, named like real sites, where every
  path is a page of dense links into the farm; each farm host is linked once, from an item of a
  real site (a comment's link).

Every URL the web can serve has a kind (:class:`UrlKind`, :meth:`DomainWeb.kind`): a real
page, a redirect, a 404, a robots.txt, or junk (an endless space, a farm page, a soft 404).
:class:`synthweb.truth.DomainTruth` tells which real pages a crawl can reach from the seeds
through real pages only, and how well linked each is.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime
import html
import itertools
import random
from collections.abc import Iterator

from synthweb import endless
from synthweb.compat import StrEnum
from synthweb.robots import RobotsFile, RobotsGroup, RobotsKind, Rule
from synthweb.sites import FarmHost, HostPlan, Layout, Section, slug
from synthweb.urls import split_url

__all__ = ["Anchor", "DomainPage", "DomainWeb", "JUNK_KINDS", "TRAP_KINDS", "UrlKind"]


class UrlKind(StrEnum):
    """What a URL of the multi-domain web is."""

    #: A real page of a real site (200).
    PAGE = "page"
    #: The bare domain of a ``www.`` site: 301 to the same path on ``www.``.
    REDIRECT = "redirect"
    #: 404.
    NOT_FOUND = "not-found"
    ROBOTS = "robots"
    #: A host that is not on the web (the proxy answers 502).
    OFF_WEB = "off-web"
    CALENDAR = "calendar"
    SESSION = "session"
    REPEAT_PATH = "repeat-path"
    PARAMS = "params"
    FARM = "farm"
    #: A 200 "not found" page.
    SOFT_404 = "soft-404"

    @property
    def is_junk(self) -> bool:
        """Whether this is junk: an endless space, a farm page or a soft 404."""
        return self in JUNK_KINDS

    @property
    def is_trap(self) -> bool:
        """Whether this is an endless space on a real site."""
        return self in TRAP_KINDS


TRAP_KINDS = frozenset({UrlKind.CALENDAR, UrlKind.SESSION, UrlKind.REPEAT_PATH, UrlKind.PARAMS})
JUNK_KINDS = TRAP_KINDS | {UrlKind.FARM, UrlKind.SOFT_404}

_HTML = "text/html; charset=utf-8"
_NOT_FOUND = b"<html><body><h1>404 Not Found</h1></body></html>\n"
_TEXT = "text/plain; charset=utf-8"
#: Event ``n`` of the calendar site takes place on this day plus ``3 n`` days.
_EVENTS_START = datetime.date(2025, 6, 2)
_EVENT_SPACING = 3
_ZIPF: dict[int, list[float]] = {}


@dataclasses.dataclass(frozen=True, slots=True)
class Anchor:
    """One ``<a href>``: the reference as written, the canonical URL it resolves to, its text."""

    href: str
    url: str
    text: str


@dataclasses.dataclass(frozen=True)
class DomainPage:
    """A page of the multi-domain web (real or junk), or a redirect."""

    url: str
    kind: UrlKind
    status: int
    title: str = ""
    text: str = ""
    #: The site's navigation, then the page's own links.
    nav: tuple[Anchor, ...] = ()
    links: tuple[Anchor, ...] = ()
    #: The absolute Location of a redirect.
    location: str | None = None

    @property
    def anchors(self) -> tuple[Anchor, ...]:
        """Every link of the page, in document order."""
        return self.nav + self.links


@dataclasses.dataclass(frozen=True)
class _Place:
    """Where a (host, path) lands in the model."""

    kind: UrlKind
    what: str
    plan: HostPlan | None = None
    section: Section | None = None
    number: int = 0
    detail: object = None


class DomainWeb:
    """The model of the multi-domain web (see the module docstring). Answers are pure functions
    of (config, host, path); pages are cached. Thread-safe for reading."""

    def __init__(self, seed: int, hosts: int, *, largest: int = 0, exponent: float = 1.2,
                 farm_hosts: int = 12, farm_clusters: int = 3, soft_404_hosts: int = 3,
                 endless_spaces: bool = True, seed_sites: int = 5) -> None:
        self.seed = seed
        self.layout = Layout(seed, hosts, largest or max(40, 15 * hosts), exponent,
                             farm_hosts=farm_hosts, farm_clusters=farm_clusters,
                             soft_404_hosts=soft_404_hosts, traps=endless_spaces)
        self.seed_sites = seed_sites
        self._pages: dict[str, DomainPage] = {}
        self._navs: dict[str, tuple[Anchor, ...]] = {}
        self._ranked: dict[tuple[str, str], list[int]] = {}
        self._farm_entries = self._place_farm_entries()

    # -- names -------------------------------------------------------------------------------

    def host_names(self) -> list[str]:
        """The hosts of real sites, in layout order."""
        return [plan.name for plan in self.layout.hosts]

    def redirect_host_names(self) -> list[str]:
        """The bare domains that redirect to their ``www.`` host."""
        return sorted(self.layout.redirects)

    def farm_host_names(self) -> list[str]:
        """The link farm's hosts."""
        return [farm.name for farm in self.layout.farms]

    def is_host(self, host: str) -> bool:
        """Whether ``host`` answers (real, redirecting or farm host)."""
        layout = self.layout
        return host in layout.by_name or host in layout.redirects or host in layout.farm_by_name

    def plan(self, host: str) -> HostPlan:
        """The plan of a real host."""
        return self.layout.by_name[host]

    def seeds(self, count: int | None = None) -> list[str]:
        """The home pages of ``count`` real hosts (``seed_sites`` if None), in a seeded order."""
        return self.layout.seeds(self.seed_sites if count is None else count)

    def legit_urls(self) -> Iterator[str]:
        """Every real page of the web (robots.txt may forbid some), host by host."""
        for plan in self.layout.hosts:
            base = f"http://{plan.name}"
            yield base + "/"
            yield from (base + path for path in plan.statics)
            if plan.robots == "admin":
                yield base + "/admin/login"
            for section in plan.sections:
                yield from (base + section.index_path(k) for k in
                            range(1, section.index_pages + 1))
                yield from (base + section.item_path(n) for n in range(1, section.items + 1))

    # -- what a URL is -----------------------------------------------------------------------

    def kind(self, url: str) -> UrlKind:
        """The kind of a canonical ``http://`` URL (see :class:`UrlKind`)."""
        host, path = split_url(url.partition("#")[0])
        return self._locate(host, path).kind

    def _locate(self, host: str, path: str) -> _Place:
        layout = self.layout
        if host in layout.redirects or host in layout.farm_by_name or host in layout.by_name:
            if path == "/robots.txt":
                return _Place(UrlKind.ROBOTS, "robots")
        if host in layout.redirects:
            return _Place(UrlKind.REDIRECT, "redirect", detail=layout.redirects[host])
        if host in layout.farm_by_name:
            return _Place(UrlKind.FARM, "farm", detail=layout.farm_by_name[host])
        plan = layout.by_name.get(host)
        if plan is None:
            return _Place(UrlKind.OFF_WEB, "off-web")
        place = _locate_real(plan, path) or _locate_trap(plan, path)
        if place is None and "session" in plan.traps:
            place = _locate_session(plan, path)
        if place is None:
            kind = UrlKind.SOFT_404 if plan.soft_404 else UrlKind.NOT_FOUND
            place = _Place(kind, kind.value, plan)
        return place

    # -- pages -------------------------------------------------------------------------------

    def page(self, url: str) -> DomainPage | None:
        """The page (or redirect) at canonical ``url``; None for a 404, robots.txt, off the web."""
        page = self._pages.get(url)
        if page is None:
            host, path = split_url(url)
            place = self._locate(host, path)
            if place.kind in (UrlKind.NOT_FOUND, UrlKind.ROBOTS, UrlKind.OFF_WEB):
                return None
            page = self._build(url, place)
            if len(self._pages) > 200_000:
                self._pages.clear()
            self._pages[url] = page
        return page

    def _build(self, url: str, place: _Place) -> DomainPage:
        if place.kind is UrlKind.REDIRECT:
            path = split_url(url)[1]
            return DomainPage(url, place.kind, 301, location=f"http://{place.detail}{path}")
        if place.kind is UrlKind.FARM:
            assert isinstance(place.detail, FarmHost)
            return self._farm_page(url, place.detail)
        if place.kind is UrlKind.SESSION:
            return self._session_page(url, place)
        rng = random.Random(f"synthweb:{self.seed}:domains:page:{url}")
        plan = place.plan
        assert plan is not None
        # Each kind of page has its builder: "item" -> _item_links, "soft-404" -> _soft_404_links.
        builder = getattr(self, f"_{place.what.replace('-', '_')}_links")
        title, links = builder(rng, plan, place)
        nav = self._nav(plan)
        if "session" in plan.traps and place.kind is UrlKind.PAGE:
            visit = endless.with_session("/account/", endless.session_id(url))
            nav += (Anchor(visit, f"http://{plan.name}{visit}", "Your account"),)
        text = _text(rng, 40 if place.kind is UrlKind.PAGE else 12)
        return DomainPage(url, place.kind, 200, title, text, nav, tuple(links))

    def _nav(self, plan: HostPlan) -> tuple[Anchor, ...]:
        nav = self._navs.get(plan.name)
        if nav is None:
            base = f"http://{plan.name}"
            items = [("/", "Home")] + [(s.index_path(1), _label(s)) for s in plan.sections]
            items += [(path, path[1:-5].title()) for path in plan.statics]
            if plan.robots == "admin":
                items.append(("/admin/login", "Log in"))
            if "calendar" in plan.traps:
                items.append((self._calendar_entry(plan), "Calendar"))
            links = [Anchor(href, base + href, text) for href, text in items]
            links += [Anchor(f"http://{s}/", f"http://{s}/", s) for s in plan.siblings]
            nav = self._navs[plan.name] = tuple(links)
        return nav

    def _local(self, plan: HostPlan, path: str, text: str) -> Anchor:
        return Anchor(path, f"http://{plan.name}{path}", text)

    def _item(self, plan: HostPlan, section: Section, n: int) -> Anchor:
        return self._local(plan, section.item_path(n), f"{_label(section)} {n}")

    def _home_links(self, rng: random.Random, plan: HostPlan, place: _Place) -> tuple[str, list]:
        links = []
        for section in plan.sections:
            links += [self._item(plan, section, n) for n in list(section.listing(1))[:3]]
            links += [self._item(plan, section, n) for n in self._ranking(plan, section)[:2]]
        ring = self.layout.hosts[self.layout.ring[plan.index]]
        partners = [ring] + [self.layout.draw_host(rng, plan.domain) for _ in
                             range(rng.randint(1, 3))]
        for partner in dict.fromkeys(partners):
            if partner.domain != plan.domain:
                url = f"http://{partner.name}/"
                links.append(Anchor(url, url, partner.name))
        return f"{plan.name}", links

    def _static_links(self, rng: random.Random, plan: HostPlan, place: _Place) -> tuple[str, list]:
        links = [self._external(rng, plan)] if rng.random() < 0.5 else []
        return f"{place.detail} - {plan.name}", links

    def _admin_links(self, rng: random.Random, plan: HostPlan, place: _Place) -> tuple[str, list]:
        return f"Log in - {plan.name}", []

    def _index_links(self, rng: random.Random, plan: HostPlan, place: _Place) -> tuple[str, list]:
        section, k = place.section, place.number
        assert section is not None
        faq = section.name == "faq"
        links = [
            Anchor(section.item_path(n).rpartition("/")[2], self._item(plan, section, n).url,
                   f"Question {n}") if faq else self._item(plan, section, n)
            for n in section.listing(k)
        ]
        pages = section.index_pages
        shown = sorted({1, k - 2, k - 1, k + 1, k + 2, pages} - {k})
        links += [self._local(plan, section.index_path(p), f"page {p}") for p in shown
                  if 1 <= p <= pages]
        links += [self._item(plan, section, n) for n in self._ranking(plan, section)[:5]]
        if "params" in plan.traps and section.name == "shop":
            base = section.index_path(1)
            links += [self._local(plan, f"{base}?{query}", text)
                      for query, text in endless.facet_links([])]
        return f"{_label(section)}, page {k} - {plan.name}", links

    def _item_links(self, rng: random.Random, plan: HostPlan, place: _Place) -> tuple[str, list]:
        section, n = place.section, place.number
        assert section is not None
        links = [self._local(plan, section.index_path(1), _label(section))]
        links += [self._item(plan, section, m) for m in (n - 1, n + 1)
                  if section.hidden < m <= section.items]
        ranking = self._ranking(plan, section)
        links += [self._item(plan, section, ranking[_zipf(rng, len(ranking))])
                  for _ in range(rng.randint(2, 6))]
        others = [s for s in plan.sections if s is not section]
        for _ in range(rng.randint(0, 2) if others else 0):
            other = rng.choice(others)
            other_ranking = self._ranking(plan, other)
            links.append(self._item(plan, other, other_ranking[_zipf(rng, len(other_ranking))]))
        if rng.random() < 0.3:
            links += [self._external(rng, plan) for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.03:
            links.append(self._local(plan, _dead_path(rng), "archive"))
        if section.name == "events":
            day = endless.day_path(_event_date(n))
            links.append(self._local(plan, day, "in the calendar"))
        if section.name == "faq" and "repeat-path" in plan.traps:
            links.append(Anchor(endless.REPEAT_HREF, f"http://{plan.name}/support/faq/"
                                f"{endless.REPEAT_HREF}", "Back to the FAQ"))
        links += self._farm_entries.get(place_key(plan, section, n), [])
        return f"{_label(section)} {n} - {plan.name}", links

    def _external(self, rng: random.Random, plan: HostPlan) -> Anchor:
        """A link to another site: its home page, a popular item or a section index, or now
        and then a dead path (more often to a soft-404 host); sometimes by its bare domain."""
        target = self.layout.draw_host(rng, plan.domain)
        roll = rng.random()
        path = "/"
        if (target.soft_404 and rng.random() < 0.35) or rng.random() < 0.02:
            path = _dead_path(rng)
        elif roll >= 0.55 and target.sections:
            section = rng.choice(target.sections)
            ranking = self._ranking(target, section)
            path = (section.item_path(ranking[_zipf(rng, min(10, len(ranking)))])
                    if roll < 0.9 else section.index_path(1))
        host = target.name
        if host == f"www.{target.domain}" and rng.random() < 0.1:
            host = target.domain
        url = f"http://{host}{path}"
        return Anchor(url, url, target.name)

    def _ranking(self, plan: HostPlan, section: Section) -> list[int]:
        """The section's linkable items, most popular first (a seeded order)."""
        key = (plan.name, section.name)
        ranking = self._ranked.get(key)
        if ranking is None:
            ranking = list(range(section.hidden + 1, section.items + 1))
            random.Random(f"synthweb:{self.seed}:domains:rank:{plan.name}:{section.name}"
                          ).shuffle(ranking)
            self._ranked[key] = ranking
        return ranking

    def _place_farm_entries(self) -> dict[tuple[str, str], list[Anchor]]:
        """One link to each farm host, from an item of a real site (a comment's link), on as
        many different registered domains as there are."""
        rng = random.Random(f"synthweb:{self.seed}:domains:farm-entries")
        plans = [p for p in self.layout.hosts if any(s.listed for s in p.sections)]
        rng.shuffle(plans)
        plans.sort(key=lambda p: p.name != f"www.{p.domain}" and p.name != p.domain)
        entries: dict[tuple[str, str], list[Anchor]] = {}
        for number, farm in enumerate(self.layout.farms):
            if not plans:
                break
            plan = plans[number % len(plans)]
            section = rng.choice([s for s in plan.sections if s.listed])
            n = rng.randint(section.hidden + 1, section.items)
            path = "/" if rng.random() < 0.7 else endless.farm_path(rng.randint(1, 10**7))
            url = f"http://{farm.name}{path}"
            entries.setdefault(place_key(plan, section, n), []).append(
                Anchor(url, url, endless.farm_title(path)))
        return entries

    def farm_entries(self) -> dict[str, list[str]]:
        """Real page -> the farm URLs it links to."""
        return {
            f"http://{host}{path}": [anchor.url for anchor in anchors]
            for (host, path), anchors in self._farm_entries.items()
        }

    # -- endless spaces and junk -------------------------------------------------------------

    def _calendar_entry(self, plan: HostPlan) -> str:
        events = plan.section("events")
        hidden = events.hidden if events else 0
        return endless.month_path(_event_date(hidden + 1))

    def _calendar_links(self, rng: random.Random, plan: HostPlan,
                        place: _Place) -> tuple[str, list]:
        day, is_day = place.detail  # type: ignore[misc]
        links = [self._local(plan, path, text) for _, path, text in
                 endless.calendar_links(day, is_day)]
        events = plan.section("events")
        delta = (day - _EVENTS_START).days
        if is_day and events and delta % _EVENT_SPACING == 0:
            n = delta // _EVENT_SPACING
            if 1 <= n <= events.items:
                links.append(self._item(plan, events, n))
        return f"Calendar {day.isoformat()} - {plan.name}", links

    def _facets_links(self, rng: random.Random, plan: HostPlan, place: _Place) -> tuple[str, list]:
        params = place.detail
        assert isinstance(params, list)
        section = place.section
        assert section is not None
        base = section.index_path(1)
        links = [
            self._local(plan, f"{base}?{query}" if query else base, text)
            for query, text in endless.facet_links(params)
        ]
        ranking = self._ranking(plan, section)
        links += [self._item(plan, section, n) for n in rng.sample(ranking, min(12, len(ranking)))]
        return f"{_label(section)}: {endless.facet_query(params)} - {plan.name}", links

    def _repeat_links(self, rng: random.Random, plan: HostPlan, place: _Place) -> tuple[str, list]:
        depth, n = place.detail  # type: ignore[misc]
        section = plan.section("faq")
        assert section is not None
        folder = f"http://{plan.name}/support/faq/{endless.REPEAT_HREF * depth}"
        if n == 0:
            links = [Anchor(f"q-{m}.html", f"{folder}q-{m}.html", f"Question {m}")
                     for m in range(1, section.items + 1)]
        else:
            links = [Anchor(endless.REPEAT_HREF, folder + endless.REPEAT_HREF, "Back to the FAQ")]
            links += [Anchor(f"q-{m}.html", f"{folder}q-{m}.html", f"Question {m}")
                      for m in (n - 1, n + 1) if 1 <= m <= section.items]
        return f"FAQ - {plan.name}", links

    def _soft_404_links(self, rng: random.Random, plan: HostPlan,
                        place: _Place) -> tuple[str, list]:
        links = [self._item(plan, s, self._ranking(plan, s)[0]) for s in plan.sections
                 if self._ranking(plan, s)]
        return f"Page not found - {plan.name}", links[:3]

    def _account_links(self, rng: random.Random, plan: HostPlan,
                       place: _Place) -> tuple[str, list]:
        links = []
        for section in plan.sections:
            ranking = self._ranking(plan, section)
            links += [self._item(plan, section, ranking[_zipf(rng, len(ranking))])
                      for _ in range(3)]
        return f"Your account - {plan.name}", links

    def _session_page(self, url: str, place: _Place) -> DomainPage:
        """The page of the path without its id, every link into the site with a fresh id."""
        plan = place.plan
        assert plan is not None
        base, base_path = place.detail  # type: ignore[misc]
        host = f"http://{plan.name}"
        if base is None:  # the account page, which exists only with an id
            rng = random.Random(f"synthweb:{self.seed}:domains:page:{url}")
            title, links = self._account_links(rng, plan, place)
            nav = (*self._nav(plan), Anchor("/account/", host + "/account/", "Your account"))
            text = ""
        else:
            shown = self.page(host + base_path)
            assert shown is not None
            title, text, nav, links = shown.title, shown.text, shown.nav, tuple(shown.links)

        def fresh(number: int, anchor: Anchor) -> Anchor:
            if not anchor.url.startswith(host + "/"):
                return anchor
            path = anchor.url[len(host) :]
            bare = (endless.split_session(path) or (path, ""))[0]
            written = endless.with_session(bare, endless.session_id(f"{url}#{number}"))
            return Anchor(written, host + written, anchor.text)

        anchors = [fresh(i, anchor) for i, anchor in enumerate((*nav, *links))]
        return DomainPage(url, UrlKind.SESSION, 200, title, text, tuple(anchors[: len(nav)]),
                          tuple(anchors[len(nav) :]))

    def _farm_page(self, url: str, farm: FarmHost) -> DomainPage:
        rng = random.Random(f"synthweb:{self.seed}:domains:farm:{url}")
        path = split_url(url)[1]
        homes = [f"http://{plan.name}/" for plan in self.layout.hosts[:: max(1, len(
            self.layout.hosts) // 10)]]
        links = endless.farm_links(rng, farm, self.layout.farms, homes, 45 if path == "/" else 30)
        anchors = tuple(Anchor(href, target, text) for href, target, text in links)
        words = " ".join(rng.choice(("cheap", "best", "offer", "deal", "free", "top"))
                         for _ in range(60))
        return DomainPage(url, UrlKind.FARM, 200, endless.farm_title(path), words, (), anchors)

    # -- answers -----------------------------------------------------------------------------

    def robots(self, host: str) -> RobotsFile:
        """The robots.txt of a host of this web."""
        plan = self.layout.by_name.get(host)
        if plan is not None and plan.robots == "missing":
            return RobotsFile(host, RobotsKind.MISSING, "404", 404, _HTML, _NOT_FOUND, ())
        rules: tuple[Rule, ...] = ()
        if plan is not None and plan.robots == "admin":
            rules = (Rule(False, "/admin/"),)
        lines = "".join(f"Disallow: {rule.pattern}\n" for rule in rules) or "Disallow:\n"
        body = f"User-agent: *\n{lines}".encode()
        variant = "admin" if rules else "allow-all"
        return RobotsFile(host, RobotsKind.NORMAL, variant, 200, _TEXT, body,
                          (RobotsGroup(("*",), rules),))

    def response(self, host: str, path: str) -> tuple[int, tuple[tuple[str, str], ...], bytes]:
        """(status, headers, body) of a GET of ``path`` on ``host``."""
        place = self._locate(host, path)
        if place.kind is UrlKind.ROBOTS:
            robots = self.robots(host)
            return robots.status, (("Content-Type", robots.content_type),), robots.body
        if place.kind is UrlKind.OFF_WEB:
            body = f"502 Bad Gateway: cannot resolve {host}\n".encode()
            return 502, (("Content-Type", _TEXT),), body
        page = self.page(f"http://{host}{path}")
        if page is None:
            return 404, (("Content-Type", _HTML),), _NOT_FOUND
        if page.location is not None:
            headers = (("Content-Type", _HTML), ("Location", page.location))
            return 301, headers, b"<html><body><p>Moved</p></body></html>\n"
        return page.status, (("Content-Type", _HTML),), render(page)


def place_key(plan: HostPlan, section: Section, n: int) -> tuple[str, str]:
    """The (host, path) of item ``n`` of ``section``."""
    return plan.name, section.item_path(n)


def _locate_real(plan: HostPlan, path: str) -> _Place | None:
    """The real page of ``plan`` at ``path``, if any."""
    if path == "/":
        return _Place(UrlKind.PAGE, "home", plan)
    if path in plan.statics:
        return _Place(UrlKind.PAGE, "static", plan, detail=path[1:-5].title())
    if path == "/admin/login" and plan.robots == "admin":
        return _Place(UrlKind.PAGE, "admin", plan)
    for section in plan.sections:
        k = section.index_number(path)
        if k is not None:
            return _Place(UrlKind.PAGE, "index", plan, section, k)
        n = section.item_number(path)
        if n is not None:
            return _Place(UrlKind.PAGE, "item", plan, section, n)
    return None


def _locate_trap(plan: HostPlan, path: str) -> _Place | None:
    """The page of an endless space of ``plan`` at ``path``, if any."""
    if "calendar" in plan.traps and path.startswith("/calendar/"):
        found = endless.calendar_date(path)
        if found is not None:
            return _Place(UrlKind.CALENDAR, "calendar", plan, detail=found)
    shop = plan.section("shop")
    if "params" in plan.traps and shop is not None:
        base, _, query = path.partition("?")
        params = endless.parse_facets(query) if base == shop.index_path(1) and query else None
        if params is not None:
            return _Place(UrlKind.PARAMS, "facets", plan, shop, detail=params)
    faq = plan.section("faq")
    if "repeat-path" in plan.traps and faq is not None:
        found_repeat = endless.repeat_depth(path)
        if found_repeat is not None and found_repeat[0] >= 1:
            depth, rest = found_repeat
            n = faq.item_number(f"/support/faq/{rest}") if rest else 0
            if n is not None:
                return _Place(UrlKind.REPEAT_PATH, "repeat", plan, faq, detail=(depth, n))
    return None


def _locate_session(plan: HostPlan, path: str) -> _Place | None:
    """A page of the session space: a real page's path, or the account page, with an id."""
    split = endless.split_session(path)
    if split is None:
        return None
    base_path = split[0]
    if base_path == "/account/":
        return _Place(UrlKind.SESSION, "session", plan, detail=(None, base_path))
    base = _locate_real(plan, base_path) or _locate_trap(plan, base_path)
    if base is None:
        return None
    return _Place(UrlKind.SESSION, "session", plan, detail=(base, base_path))


def _event_date(n: int) -> datetime.date:
    return _EVENTS_START + datetime.timedelta(days=_EVENT_SPACING * n)


def _dead_path(rng: random.Random) -> str:
    k = rng.randint(1, 400)
    return f"/archive/{slug(k)}-{k}.html"


def _label(section: Section) -> str:
    return "FAQ" if section.name == "faq" else section.name.title()


def _zipf(rng: random.Random, count: int) -> int:
    """A rank in [0, count), rank r drawn with a weight 1 / (r + 1)."""
    cumulative = _ZIPF.get(count)
    if cumulative is None:
        cumulative = _ZIPF[count] = list(itertools.accumulate(1 / (r + 1) for r in range(count)))
    return min(count - 1, bisect.bisect(cumulative, rng.random() * cumulative[-1]))


_WORDS = (
    "the", "a", "new", "local", "season", "market", "garden", "report", "team", "city", "week",
    "open", "first", "best", "guide", "notes", "our", "with", "and", "from", "for", "about",
    "update", "review", "price", "order", "visit", "story", "photo", "event", "winter", "summer",
)  # fmt: skip


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def render(page: DomainPage) -> bytes:
    """The HTML of a page: navigation, heading, text, its own links."""
    nav = "".join(f'<li><a href="{html.escape(a.href)}">{html.escape(a.text)}</a></li>'
                  for a in page.nav)
    links = "".join(f'<li><a href="{html.escape(a.href)}">{html.escape(a.text)}</a></li>\n'
                    for a in page.links)
    title = html.escape(page.title)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"</head>\n<body><header><nav><ul>{nav}</ul></nav></header>\n<main><h1>{title}</h1>\n"
        f"<p>{html.escape(page.text)}</p>\n<ul>\n{links}</ul></main>\n"
        f"<footer><p>{title}</p></footer></body></html>\n"
    ).encode()
