"""The layout of the multi-domain web: registered domains, their hosts, sections and sizes.

Everything here is drawn from the configuration's seed alone (no page is built), so the model
(:mod:`synthweb.domains`) can ask any host's plan, and where cross-site links go, cheaply.

- **Sites**: registered domains ``{word}-{word}.test``. Most have one host (``www.`` or the bare
  domain); some have several (``www.``, ``blog.``, ``shop.``); the largest has three. The bare
  domain of a site on ``www.`` answers a 301 to ``www.`` for every path.
- **Sizes**: the ``r``-th largest host has about ``largest / r ** exponent`` pages (at least 4):
  a few large hosts of hundreds of pages next to many of a handful.
- **Sections**: a host's pages are a home page, one or two static pages and sections: an index
  (``/news/``, then ``/news/page/{k}/``, newest items first) and items whose URLs share one
  shape (``/news/{n}.html``, ``/blog/{word}-{n}.html``, ``/shop/item-{n}.html`` ...).
- **Authority**: each host has a weight (its size to the power 0.6 times a log-normal draw) that
  decides how often other sites link to it.
- **Farms**: ``farm_hosts`` hosts over several registered domains of their own (names drawn
  like the real sites', one to three hosts a domain), in ``farm_clusters`` clusters.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
import random

__all__ = ["FarmHost", "HostPlan", "Layout", "Section", "slug"]

#: Words of domain names (first and second half) and of page slugs.
_FIRST = (
    "amber", "arctic", "autumn", "bold", "brisk", "cedar", "clear", "copper", "coral", "crisp",
    "dawn", "deep", "dusty", "early", "east", "fern", "fine", "fresh", "gentle", "golden",
    "grand", "green", "hidden", "high", "honest", "iron", "ivory", "jade", "keen", "lake",
    "little", "lunar", "maple", "misty", "modern", "noble", "north", "oak", "old", "open",
    "pale", "pine", "plain", "quiet", "rapid", "red", "river", "royal", "rustic", "sandy",
    "silver", "simple", "slate", "solar", "south", "stone", "sunny", "swift", "tidy", "urban",
    "velvet", "west", "wild", "windy", "young",
)  # fmt: skip
_SECOND = (
    "anchor", "atlas", "bakery", "beacon", "bench", "bridge", "brook", "cabin", "canvas",
    "castle", "circle", "compass", "corner", "crafts", "daily", "desk", "echo", "field", "forge",
    "garden", "gazette", "grove", "harbor", "herald", "hollow", "journal", "kitchen", "lantern",
    "ledger", "market", "meadow", "mill", "notes", "orchard", "outfit", "pantry", "parade",
    "pixel", "post", "press", "quarter", "radio", "review", "ridge", "school", "signal", "square",
    "studio", "supply", "table", "tavern", "times", "tower", "trail", "valley", "voice", "wagon",
    "works", "yard",
)  # fmt: skip
_SLUGS = (
    "guide", "notes", "review", "update", "story", "recipe", "tips", "photos", "report",
    "interview", "list", "ideas", "lessons", "season", "weekend", "howto", "trip", "project",
    "garden", "market", "budget", "summer", "winter", "spring", "autumn", "city", "coast",
    "music", "film", "books", "coffee", "bread", "cycling", "running", "repair", "design",
)  # fmt: skip

#: (name, path prefix, item stem): items are ``/{prefix}/{stem}{n}.html``; stem ``*`` is a word
#: that depends on the number (``/blog/{word}-{n}.html``).
_SECTION_SHAPES = {
    "news": ("news", ""),
    "blog": ("blog", "*"),
    "shop": ("shop", "item-"),
    "forum": ("forum", "topic-"),
    "docs": ("docs", "*"),
    "events": ("events", ""),
    "faq": ("support/faq", "q-"),
    "posts": ("posts", "*"),
    "products": ("products", "item-"),
}
#: Sections a main host draws from, the first ones more often.
_MAIN_SECTIONS = ("news", "blog", "shop", "docs", "forum")
#: Sections that the endless spaces need on their host.
TRAP_SECTIONS = {"calendar": "events", "params": "shop", "repeat-path": "faq", "session": "shop"}
TRAPS = ("calendar", "session", "repeat-path", "params")

_ROBOTS_KINDS = ("allow",) * 13 + ("missing",) * 5 + ("admin",) * 2


def slug(n: int) -> str:
    """The word of item ``n`` in sections whose items are ``{word}-{n}.html``."""
    return _SLUGS[(n * 7 + n // len(_SLUGS)) % len(_SLUGS)]


@dataclasses.dataclass(frozen=True)
class Section:
    """One section of a host: an index paginated ``per_page`` items a page, and its items."""

    name: str
    prefix: str
    stem: str
    items: int
    per_page: int
    #: Items 1..hidden are linked from nowhere in the site but the calendar (past events).
    hidden: int = 0

    def item_path(self, n: int) -> str:
        """The path of item ``n`` (1-based)."""
        stem = f"{slug(n)}-" if self.stem == "*" else self.stem
        return f"/{self.prefix}/{stem}{n}.html"

    def item_number(self, path: str) -> int | None:
        """The number of the item at ``path``, or None if it is none of this section's."""
        head = f"/{self.prefix}/"
        if not (path.startswith(head) and path.endswith(".html")):
            return None
        name = path[len(head) : -len(".html")]
        digits = name.rpartition("-")[2] if self.stem == "*" else name.removeprefix(self.stem)
        if not digits.isdigit() or digits[0] == "0":
            return None
        n = int(digits)
        return n if 1 <= n <= self.items and self.item_path(n) == path else None

    @property
    def index_pages(self) -> int:
        """How many pages the index has."""
        return max(1, math.ceil(self.listed / self.per_page))

    @property
    def listed(self) -> int:
        """How many items the index lists (all but the hidden ones)."""
        return self.items - self.hidden

    def index_path(self, k: int) -> str:
        """The path of index page ``k`` (1-based)."""
        return f"/{self.prefix}/" if k == 1 else f"/{self.prefix}/page/{k}/"

    def index_number(self, path: str) -> int | None:
        """The number of the index page at ``path``, or None."""
        if path == f"/{self.prefix}/":
            return 1
        head = f"/{self.prefix}/page/"
        digits = path[len(head) : -1] if path.startswith(head) and path.endswith("/") else ""
        if digits.isdigit() and digits[0] != "0" and 2 <= int(digits) <= self.index_pages:
            return int(digits)
        return None

    def listing(self, k: int) -> range:
        """The items index page ``k`` lists, newest (highest number) first."""
        top = self.items - (k - 1) * self.per_page
        return range(top, max(self.hidden, top - self.per_page), -1)


@dataclasses.dataclass(frozen=True)
class HostPlan:
    """A host of a real site, before its pages are built."""

    index: int
    name: str
    #: The registered domain.
    domain: str
    #: ``main`` (``www.`` or the bare domain), ``blog`` or ``shop``.
    role: str
    sections: tuple[Section, ...]
    statics: tuple[str, ...]
    #: ``allow`` (200, allow all), ``missing`` (404) or ``admin`` (200, ``Disallow: /admin/``).
    robots: str
    #: The endless spaces on this host (see :data:`TRAPS`).
    traps: frozenset[str]
    #: Whether every unknown path answers 200 with a "not found" page.
    soft_404: bool
    authority: float
    #: The other hosts of its registered domain, in their order.
    siblings: tuple[str, ...]

    def section(self, name: str) -> Section | None:
        """The section called ``name``, if the host has it."""
        return next((s for s in self.sections if s.name == name), None)

    @property
    def size(self) -> int:
        """The host's pages (robots.txt disallowed ones apart)."""
        listed = sum(s.items + s.index_pages for s in self.sections)
        return 1 + len(self.statics) + listed


@dataclasses.dataclass(frozen=True)
class FarmHost:
    """A host of a link farm."""

    name: str
    domain: str
    cluster: int


class Layout:
    """The sites, hosts and farms of a multi-domain web (see the module docstring)."""

    def __init__(self, seed: int, hosts: int, largest: int, exponent: float, *,
                 farm_hosts: int, farm_clusters: int, soft_404_hosts: int, traps: bool) -> None:
        self.seed = seed
        rng = random.Random(f"synthweb:{seed}:domains:layout")
        labels = _domain_labels(rng, hosts + farm_hosts + 2)
        roles = _site_roles(rng, hosts)
        sizes = _host_sizes(rng, len(roles), largest, exponent)
        self.hosts = _place_hosts(rng, roles, sizes, labels)
        self._add_traps(rng, traps, soft_404_hosts)
        self.by_name = {plan.name: plan for plan in self.hosts}
        #: Bare domains that redirect to their ``www.`` host: bare name -> www name.
        self.redirects = {
            plan.domain: plan.name for plan in self.hosts if plan.name == f"www.{plan.domain}"
        }
        self.farms = _place_farms(rng, labels[len(roles) :], farm_hosts, farm_clusters)
        self.farm_by_name = {farm.name: farm for farm in self.farms}
        weights = list(itertools.accumulate(plan.authority for plan in self.hosts))
        self._authority = weights
        #: Sites in a seeded cycle: each home page links to the next one's (all are reachable).
        order = list(range(len(self.hosts)))
        random.Random(f"synthweb:{seed}:domains:ring").shuffle(order)
        self.ring = {order[i]: order[(i + 1) % len(order)] for i in range(len(order))}
        self.seed_order = order

    def _add_traps(self, rng: random.Random, traps: bool, soft_404_hosts: int) -> None:
        """Put each endless space on a host of its own among the middle-sized and large ones,
        adding the section it needs; make ``soft_404_hosts`` hosts answer soft 404s."""
        by_size = sorted(range(len(self.hosts)), key=lambda i: -self.hosts[i].size)
        candidates = by_size[: max(len(TRAPS), len(by_size) // 3)]
        rng.shuffle(candidates)
        for position, trap in enumerate(TRAPS if traps else ()):
            index = candidates[position % len(candidates)]
            self.hosts[index] = _with_trap(self.hosts[index], trap, rng)
        others = [i for i in range(len(self.hosts)) if not self.hosts[i].traps]
        rng.shuffle(others)
        for index in others[:soft_404_hosts]:
            self.hosts[index] = dataclasses.replace(self.hosts[index], soft_404=True)

    def draw_host(self, rng: random.Random, avoid: str) -> HostPlan:
        """A host of another registered domain than ``avoid``, drawn by authority."""
        for _ in range(20):
            plan = self.hosts[bisect.bisect(self._authority, rng.random() * self._authority[-1])]
            if plan.domain != avoid:
                return plan
        return next((p for p in self.hosts if p.domain != avoid), self.hosts[0])

    def seeds(self, count: int) -> list[str]:
        """The home pages of ``count`` hosts, in a seeded order."""
        return [f"http://{self.hosts[i].name}/" for i in self.seed_order[:count]]


def _domain_labels(rng: random.Random, count: int) -> list[str]:
    pairs = [f"{a}-{b}" for a in _FIRST for b in _SECOND]
    labels = rng.sample(pairs, min(count, len(pairs)))
    while len(labels) < count:
        labels.append(f"{rng.choice(pairs)}-{len(labels)}")
    return labels


def _site_roles(rng: random.Random, hosts: int) -> list[tuple[int, str]]:
    """(site number, role) per host: the first site www + blog + shop, then most sites one
    host, some two or three."""
    roles: list[tuple[int, str]] = []
    site = 0
    while len(roles) < hosts:
        left = hosts - len(roles)
        roll = rng.random()
        if site == 0 or (roll < 0.04 and left >= 3):
            names = ["main", "blog", "shop"][:left]
        elif roll < 0.12 and left >= 2:
            names = ["main", rng.choice(("blog", "shop"))]
        else:
            names = ["main"]
        roles += [(site, name) for name in names]
        site += 1
    return roles


def _host_sizes(rng: random.Random, hosts: int, largest: int, exponent: float) -> list[int]:
    """Target page counts, the largest first (site 0's hosts get the three largest)."""
    sizes = [max(4, round(largest / r**exponent * rng.uniform(0.85, 1.15))) for r in
             range(1, hosts + 1)]
    head, tail = sizes[:3], sizes[3:]
    rng.shuffle(tail)
    return head + tail


def _place_hosts(rng: random.Random, roles: list[tuple[int, str]], sizes: list[int],
                 labels: list[str]) -> list[HostPlan]:
    names = []
    for site, role in roles:
        domain = f"{labels[site]}.test"
        if role == "main":
            single = sum(1 for s, _ in roles if s == site) == 1
            names.append(domain if single and rng.random() < 0.4 else f"www.{domain}")
        else:
            names.append(f"{role}.{domain}")
    plans = []
    for index, ((site, role), size) in enumerate(zip(roles, sizes, strict=True)):
        domain = f"{labels[site]}.test"
        siblings = tuple(n for (s, _), n in zip(roles, names, strict=True)
                         if s == site and n != names[index])
        sections, statics = _sections(rng, role, size)
        authority = size**0.6 * math.exp(rng.gauss(0.0, 0.8))
        plans.append(HostPlan(index, names[index], domain, role, sections, statics,
                              rng.choice(_ROBOTS_KINDS), frozenset(), False, authority, siblings))
    return plans


def _sections(
    rng: random.Random, role: str, size: int
) -> tuple[tuple[Section, ...], tuple[str, ...]]:
    """Sections and static pages for a host of about ``size`` pages."""
    statics = ("/about.html", "/contact.html") if size >= 8 else ("/about.html",)
    if role != "main":
        names = ["posts" if role == "blog" else "products"]
    else:
        count = 1 if size < 12 else 2 if size < 60 else 3 if size < 300 else 4
        names = [_MAIN_SECTIONS[0]] if count == 1 and rng.random() < 0.3 else []
        while len(names) < count:
            name = rng.choice(_MAIN_SECTIONS)
            if name not in names:
                names.append(name)
    shares = [rng.uniform(0.5, 1.5) for _ in names]
    budget = max(len(names) * 2, size - 1 - len(statics))
    sections = []
    for name, share in zip(names, shares, strict=True):
        pages = max(2, round(budget * share / sum(shares)))
        per_page = 20 if pages > 40 else 10
        items = max(1, pages - math.ceil(pages / (per_page + 1)))
        sections.append(_section(name, items, per_page))
    return tuple(sections), statics


def _section(name: str, items: int, per_page: int, hidden: int = 0) -> Section:
    prefix, stem = _SECTION_SHAPES[name]
    return Section(name, prefix, stem, items, per_page, hidden)


def _with_trap(plan: HostPlan, trap: str, rng: random.Random) -> HostPlan:
    """``plan`` with the endless space ``trap`` and the section it needs."""
    needed = TRAP_SECTIONS[trap]
    sections = list(plan.sections)
    if plan.section(needed) is None:
        items = {"events": rng.randint(45, 90), "faq": rng.randint(8, 24)}.get(needed, 40)
        sections.append(_section(needed, items, items if needed == "faq" else 20))
    if needed == "events":
        events = next(s for s in sections if s.name == "events")
        # The past third of the events: only the calendar still links to them.
        sections[sections.index(events)] = dataclasses.replace(events, hidden=events.items // 3)
    return dataclasses.replace(plan, sections=tuple(sections), traps=plan.traps | {trap})


def _place_farms(rng: random.Random, labels: list[str], count: int,
                 clusters: int) -> list[FarmHost]:
    farms: list[FarmHost] = []
    domain_number = 0
    while len(farms) < count:
        domain = f"{labels[domain_number % len(labels)]}.test"
        if domain_number >= len(labels):
            domain = f"{labels[domain_number % len(labels)]}-{domain_number}.test"
        hosts = min(count - len(farms), rng.choice((1, 1, 2, 3)))
        prefixes = ["www", "a", "b", "c", "m", "shop"] if hosts > 1 else [rng.choice(("www", ""))]
        for prefix in prefixes[:hosts]:
            name = f"{prefix}.{domain}" if prefix else domain
            farms.append(FarmHost(name, domain, domain_number % max(1, clusters)))
        domain_number += 1
    return farms
