"""The URL-policy profile on the model of the web: respelled links, the links it adds to the
normal hosts' pages (the entry points of the traps and the farm, links to popular pages), and
the pages of the trap host and the farm hosts.

What the profile is, and the spellings, traps and farm themselves, are in
:mod:`synthweb.policy`; here they become links and pages of the model. Every draw comes from
a generator of the profile's own, so the rest of the web is as without it.
"""

from __future__ import annotations

import random

from synthweb import policy
from synthweb.config import WebConfig
from synthweb.hosts import HostPlan, PlanOf, showcasing
from synthweb.model import HTML_KINDS, Link, Page, PageKind
from synthweb.robots import RobotsFile, RobotsGroup, RobotsKind
from synthweb.urls import host_index, split_url

__all__ = ["PolicyWeb", "policy_robots"]


class PolicyWeb:
    """The URL-policy profile of a :class:`~synthweb.graph.SyntheticWeb` (with it off, it adds
    nothing). ``plan_of`` gives the plan of a normal host by index."""

    def __init__(
        self, config: WebConfig, robots_kinds: list[RobotsKind], plan_of: PlanOf
    ) -> None:
        self.config = config
        self._robots_kinds = robots_kinds
        self._plan_of = plan_of
        self._farm_pages: dict[tuple[int, int], Page] = {}
        # Filled on first use: links added to pages, popular pages.
        self._extras: dict[tuple[int, int], tuple[tuple[str, str], ...]] | None = None
        self._popular: tuple[str, ...] = ()

    def popular_pages(self) -> list[str]:
        """The pages ``popular_pages`` makes popular, most linked first."""
        self.extras()
        return list(self._popular)

    def links(
        self, plan: HostPlan, number: int, url: str, links: tuple[Link, ...]
    ) -> tuple[Link, ...]:
        """The links of a page with the profile: some respelled, the profile's own added.

        Draws from its own generator, so the rest of the page is as without the profile.
        """
        config = self.config
        rng = random.Random(f"synthweb:{config.seed}:policy:{plan.index}:{number}")
        out = list(links)
        showcase_home = showcasing(config, plan.index) and number == 0
        if config.url_variant_share > 0:
            if not showcase_home:  # the showcase's catalogue of forms stays as it is
                for i, link in enumerate(out):
                    target = link.url
                    if target is None or host_index(split_url(target)[0]) is None:
                        continue  # junk and hosts off the web keep their spelling
                    if rng.random() < config.url_variant_share:
                        form = rng.choice(policy.VARIANT_FORMS)
                        same = split_url(target)[0] == plan.name
                        href = policy.variant_href(form, target, rng, same_host=same)
                        out[i] = Link(href, target)
            if number == 0:
                for path in plan.paths[plan.drawable :]:
                    target = f"http://{plan.name}{path}"
                    out.append(Link(path, target))
                    for form in rng.sample(policy.VARIANT_FORMS, 2):
                        href = policy.variant_href(form, target, rng, same_host=True)
                        out.append(Link(href, target))
            if showcase_home:
                for target in (f"http://{plan.name}/p/1", f"http://{plan.name}/"):
                    for form in policy.VARIANT_FORMS:
                        href = policy.variant_href(form, target, rng, same_host=True)
                        out.append(Link(href, target))
                for path in plan.paths[plan.drawable :]:
                    target = f"http://{plan.name}{path}"
                    for form in ("percent-lower", "session-query", "session-path", "combined"):
                        href = policy.variant_href(form, target, rng, same_host=True)
                        out.append(Link(href, target))
        extras = self.extras().get((plan.index, number), ())
        out += [Link(href, target) for href, target in extras]
        return tuple(out)

    def extras(self) -> dict[tuple[int, int], tuple[tuple[str, str], ...]]:
        """(host index, page number) -> links the profile adds to that page: the entry points
        of the traps and the farm, and the links to popular pages."""
        if self._extras is not None:
            return self._extras
        config = self.config
        extras: dict[tuple[int, int], list[tuple[str, str]]] = {}
        # Hosts whose "*" rules allow their home page (normal and 4xx robots.txt), shuffled;
        # the showcase first.
        eligible = [
            i
            for i, kind in enumerate(self._robots_kinds)
            if kind in (RobotsKind.NORMAL, RobotsKind.MISSING) and not showcasing(config, i)
        ]
        random.Random(f"synthweb:{config.seed}:policy-entries").shuffle(eligible)
        sources = ([0] if config.showcase else []) + eligible or [0]
        rng = random.Random(f"synthweb:{config.seed}:policy-extras")
        if config.traps:
            extras.setdefault((sources[0], 0), []).extend(
                (f"http://{policy.TRAP_HOST}{path}",) * 2 for path in policy.TRAP_ENTRY_PATHS
            )
        if config.farm_hosts:
            home = f"http://{policy.farm_host_name(0)}/"
            extras.setdefault((sources[0], 0), []).append((home, home))
            if config.farm_hosts > 1 and len(sources) > 1:
                pages = self._open_html_pages(sources[1]) or [0]
                second = f"http://{policy.farm_host_name(1)}/"
                extras.setdefault((sources[1], rng.choice(pages)), []).append((second, second))
        popular: list[str] = []
        if config.popular_pages:
            candidates = [
                (i, n)
                for i in sources
                for n in self._open_html_pages(i)
                if self._plan_of(i).paths[n].startswith("/p/")
            ]
            rng.shuffle(candidates)
            count = min(config.popular_pages, len(candidates))
            for j, (target_host, target_number) in enumerate(candidates[:count]):
                target_plan = self._plan_of(target_host)
                target = f"http://{target_plan.name}{target_plan.paths[target_number]}"
                popular.append(target)
                linkers = [
                    i
                    for i in range(config.hosts)
                    if i != target_host and not self._plan_of(i).robots.disallows_all
                ]
                rng.shuffle(linkers)
                share = (count - j) / count
                for linker in linkers[: max(1, round(share * len(linkers)))]:
                    pages = self._open_html_pages(linker)
                    if pages:
                        extras.setdefault((linker, rng.choice(pages)), []).append((target, target))
        self._popular = tuple(popular)
        self._extras = {key: tuple(links) for key, links in extras.items()}
        return self._extras

    def _open_html_pages(self, index: int) -> list[int]:
        """Numbers of the host's own HTML pages that its robots.txt lets any crawler fetch."""
        plan = self._plan_of(index)
        return [
            n
            for n in range(plan.drawable)
            if plan.kinds[n] in HTML_KINDS
            and plan.robots.allowed(plan.paths[n], "*")
            and plan.robots.allowed(plan.paths[n], "somebot")
        ]

    def page(self, host: str, path: str) -> Page | None:
        """The page at ``path`` of the trap host or of a farm host, or None (404)."""
        url = f"http://{host}{path}"
        if host == policy.TRAP_HOST:
            links = policy.trap_links(path)
            if links is None:
                return None
            return Page(
                url,
                PageKind.HTML,
                200,
                "text/html; charset=utf-8",
                links=tuple(Link(href, target) for href, target in links),
            )
        index = policy.farm_host_index(host)
        assert index is not None
        number = policy.farm_number(path, self.config.farm_pages_per_host)
        return None if number is None else self.farm_page(index, number)

    def farm_page(self, index: int, number: int) -> Page:
        """Page ``number`` of farm host ``index``."""
        page = self._farm_pages.get((index, number))
        if page is None:
            config = self.config
            rng = random.Random(f"synthweb:{config.seed}:farm:{index}:{number}")
            links = policy.farm_links(
                rng,
                index,
                number,
                config.farm_hosts,
                config.farm_pages_per_host,
                config.farm_links_per_page,
            )
            url = f"http://{policy.farm_host_name(index)}{policy.farm_path(number)}"
            page = self._farm_pages[(index, number)] = Page(
                url,
                PageKind.HTML,
                200,
                "text/html; charset=utf-8",
                links=tuple(Link(href, target) for href, target in links),
            )
        return page


def policy_robots(host: str) -> RobotsFile:
    """The robots.txt of the trap host and of every farm host: it allows everything."""
    body = f"# robots.txt for {host}\nUser-agent: *\nDisallow:\n".encode()
    return RobotsFile(
        host,
        RobotsKind.NORMAL,
        "allow-all",
        200,
        "text/plain; charset=utf-8",
        body,
        (RobotsGroup(("*",), ()),),
    )
