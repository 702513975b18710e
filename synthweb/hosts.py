"""The hosts ``h{i}.synth.test`` before their links are drawn: which robots.txt each host has,
and the kind and path of each of its pages (:class:`HostPlan`).

Each host draws from its own generator seeded with its index, so a plan is built without
building the rest of the web; the profiles that add pages to a host (spellings, /news/ pages,
sitemaps and orphans) draw from generators of their own and place their pages after the
host's own, so the host's own pages are the same with them on or off.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

from synthweb import neardup
from synthweb import sitemaps as sitemap_web
from synthweb.config import PAGE_KIND_SHARES, ROBOTS_KIND_SHARES, WebConfig
from synthweb.model import HTML_KINDS, PageKind
from synthweb.robots import GARBAGE_VARIANTS, RobotsFile, RobotsKind, build_robots, with_sitemaps
from synthweb.urls import host_name

__all__ = [
    "SHOWCASE_PAGES", "SHOWCASE_REDIRECTS", "HostPlan", "PlanOf", "assign_robots_kinds",
    "assign_sitemap_hosts", "build_plan", "showcasing",
]


@dataclasses.dataclass(frozen=True, slots=True)
class HostPlan:
    """A host before its links are drawn: robots.txt and the kind and path of each page."""

    index: int
    name: str
    robots: RobotsFile
    paths: tuple[str, ...]
    kinds: tuple[PageKind, ...]
    numbers: dict[str, int]
    #: Pages 0..drawable-1 are the host's own; the profile's pages follow them, and links and
    #: redirects are drawn among the first ones only, so the profile leaves them as they were.
    drawable: int
    #: The sitemap profile's additions (sitemaps, orphans; not in ``paths``), if any.
    sitemaps: sitemap_web.HostSitemaps | None = None
    #: The near-duplicate profile's pages of the host (after all others): number -> placement.
    near_duplicates: dict[int, neardup.Placement] | None = None


#: The plan of a host by index (:class:`synthweb.graph.SyntheticWeb` builds each one once).
PlanOf = Callable[[int], HostPlan]

# The showcase host's fixed pages: (number, kind, path); see SHOWCASE_REDIRECTS for redirects.
SHOWCASE_PAGES = (
    (1, PageKind.HTML, "/p/1"),
    (2, PageKind.BROKEN_HTML, "/p/2"),
    (3, PageKind.LATIN1_HTML, "/p/3"),
    (4, PageKind.CP1251_HTML, "/p/4"),
    (5, PageKind.SLOW_HTML, "/slow/5"),
    (6, PageKind.TEXT, "/t/6.txt"),
    (7, PageKind.BINARY, "/img/7.png"),
    (8, PageKind.ERROR, "/e/8"),
    (9, PageKind.REDIRECT, "/r/9"),
    (10, PageKind.REDIRECT, "/r/10"),
    (11, PageKind.REDIRECT, "/r/11"),
    (12, PageKind.REDIRECT, "/r/12"),
    (13, PageKind.REDIRECT, "/r/13"),
    (14, PageKind.HTML, "/private/14"),
    (15, PageKind.HTML, "/private/public/15"),
)
# number -> (status, Location as written; {other} is the next host): a chain 9 -> 10 -> /p/1,
# a loop 11 -> 12 -> 11 and a cross-host redirect 13 -> h1's home page.
SHOWCASE_REDIRECTS = {
    9: (301, "http://{host}/r/10"),
    10: (308, "/p/1"),
    11: (302, "/r/12"),
    12: (307, "http://{host}/r/11"),
    13: (301, "http://{other}/"),
}



def showcasing(config: WebConfig, index: int) -> bool:
    """Whether host ``index`` is the showcase (host 0, unless ``config.showcase`` is off)."""
    return config.showcase and index == 0


def assign_robots_kinds(config: WebConfig) -> list[RobotsKind]:
    """The kind of robots.txt of every host, by index: the shares of the configuration, drawn
    from its seed; the showcase's is normal."""
    kinds = [RobotsKind.NORMAL] * config.hosts
    others = list(range(1 if config.showcase else 0, config.hosts))
    random.Random(f"synthweb:{config.seed}:robots-kinds").shuffle(others)
    start = 0
    for kind, field in ROBOTS_KIND_SHARES:
        share = getattr(config, field)
        # At least one host of each kind, and of each garbage variant, when hosts suffice.
        least = len(GARBAGE_VARIANTS) if kind is RobotsKind.GARBAGE else 1
        count = max(least, round(share * config.hosts)) if share > 0 else 0
        for index in others[start : start + count]:
            kinds[index] = kind
        start += count
    return kinds


def assign_sitemap_hosts(config: WebConfig, kinds: list[RobotsKind]) -> frozenset[int]:
    """The normal hosts that name sitemaps (sitemap profile): ``sitemap_host_share`` of those
    whose robots.txt answers 200 with rules, the showcase apart, chosen from the seed."""
    if not config.sitemaps or config.sitemap_host_share <= 0:
        return frozenset()
    with_rules = (RobotsKind.NORMAL, RobotsKind.AGENT_GROUP, RobotsKind.CRAWL_DELAY)
    eligible = [
        i for i, kind in enumerate(kinds)
        if kind in with_rules and not (config.showcase and i == 0)
    ]
    random.Random(f"synthweb:{config.seed}:sitemap-hosts").shuffle(eligible)
    count = max(1, round(config.sitemap_host_share * len(eligible))) if eligible else 0
    return frozenset(eligible[:count])


def build_plan(
    config: WebConfig,
    index: int,
    robots_kinds: list[RobotsKind],
    near_duplicates: dict[int, tuple[neardup.Placement, ...]],
    sitemap_indices: frozenset[int],
) -> HostPlan:
    """The plan of host ``index``, given every host's robots.txt kind
    (:func:`assign_robots_kinds`), the near-duplicate profile's placements by host index and
    the hosts that name sitemaps (:func:`assign_sitemap_hosts`)."""
    name = host_name(index)
    rng = random.Random(f"synthweb:{config.seed}:host:{index}")
    kind = robots_kinds[index]
    robots = build_robots(
        name,
        kind,
        random.Random(f"synthweb:{config.seed}:robots:{index}"),
        named_agents=config.named_agents,
        crawl_delays=config.crawl_delays,
        variant_index=robots_kinds[:index].count(RobotsKind.GARBAGE),
        showcase=showcasing(config, index),
    )
    mean = config.pages_per_host
    count = rng.randint(max(2, mean - mean // 2), mean + mean // 2)
    if kind is RobotsKind.CRAWL_DELAY:
        count = config.crawl_delay_host_pages
    fixed: dict[int, tuple[PageKind, str]] = {}
    if showcasing(config, index):
        count = max(count, len(SHOWCASE_PAGES) + 5)
        fixed = {number: (k, path) for number, k, path in SHOWCASE_PAGES}
    elif kind is RobotsKind.AGENT_GROUP:
        for number, section in ((1, "/no-bots/"), (2, "/for-bots/"), (3, "/private/")):
            fixed[number] = (PageKind.HTML, f"{section}{number}")

    kinds = [PageKind.HTML]
    paths = ["/"]
    for number in range(1, count):
        if number in fixed:
            page_kind, path = fixed[number]
        else:
            page_kind = _draw_kind(config, rng, allow_slow=kind is not RobotsKind.CRAWL_DELAY)
            path = _draw_path(
                config, rng, number, page_kind, bot_sections=kind is RobotsKind.AGENT_GROUP
            )
        kinds.append(page_kind)
        paths.append(path)
    if config.url_variant_share > 0:
        # Pages whose spellings need a real escape and real query parameters.
        paths += [f"/caf%C3%A9/{count}", f"/catalog?item={count + 1}&lang=en"]
        kinds += [PageKind.HTML, PageKind.HTML]
    placed = None
    if index in near_duplicates:
        placed = {}
        for placement in near_duplicates[index]:
            placed[len(paths)] = placement
            paths.append(f"/news/{len(paths)}")
            kinds.append(PageKind.HTML)
    numbers = {path: number for number, path in enumerate(paths)}
    sitemaps = None
    if index in sitemap_indices:
        # Its own generator: the rest of the host is as without the profile.
        html_pages = [paths[n] for n in range(1, count) if kinds[n] in HTML_KINDS]
        sitemap_rng = random.Random(f"synthweb:{config.seed}:sitemaps:{index}")
        sitemaps = sitemap_web.normal_host_sitemaps(name, sitemap_rng, html_pages)
        robots = with_sitemaps(robots, sitemaps.named)
    return HostPlan(
        index, name, robots, tuple(paths), tuple(kinds), numbers, count, sitemaps, placed,
    )


def _draw_kind(config: WebConfig, rng: random.Random, *, allow_slow: bool) -> PageKind:
    roll = rng.random()
    for page_kind, field in PAGE_KIND_SHARES:
        share = getattr(config, field)
        if roll < share:
            if page_kind is PageKind.SLOW_HTML and not allow_slow:
                return PageKind.HTML
            return page_kind
        roll -= share
    return PageKind.HTML


def _draw_path(
    config: WebConfig, rng: random.Random, number: int, kind: PageKind, *, bot_sections: bool
) -> str:
    roll = rng.random()
    if kind is PageKind.SLOW_HTML:
        return f"/slow/{number}"
    if kind is PageKind.TEXT:
        return f"/t/{number}.txt"
    if kind is PageKind.BINARY:
        return f"/img/{number}.png"
    if kind is PageKind.REDIRECT:
        return f"/r/{number}"
    if kind is PageKind.ERROR:
        return f"/e/{number}"
    if roll < config.private_page_share:
        section = "/private/public/" if rng.random() < 1 / 3 else "/private/"
        return f"{section}{number}"
    if bot_sections and roll < config.private_page_share + config.bot_section_share:
        return f"{rng.choice(('/no-bots/', '/for-bots/'))}{number}"
    return f"/p/{number}"
