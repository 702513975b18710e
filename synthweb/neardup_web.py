"""The near-duplicate profile on the model of the web: where its /news/ pages go, the links
that lead to them, and their links and bodies.

The articles, boilerplates and placements themselves are in :mod:`synthweb.neardup`; here
they become pages of the normal hosts (after each host's own, so the rest of the web is as
without the profile) and the profile's ground truth: its groups and decoys by URL.
"""

from __future__ import annotations

from synthweb import neardup
from synthweb.config import WebConfig
from synthweb.hosts import HostPlan, PlanOf, showcasing
from synthweb.model import HTML_KINDS, Link
from synthweb.robots import RobotsKind
from synthweb.urls import host_name

__all__ = ["NearDuplicateWeb"]


class NearDuplicateWeb:
    """The near-duplicate profile of a :class:`~synthweb.graph.SyntheticWeb` (with it off, it
    places nothing). ``plan_of`` gives the plan of a normal host by index."""

    def __init__(
        self, config: WebConfig, robots_kinds: list[RobotsKind], plan_of: PlanOf
    ) -> None:
        self.config = config
        self._plan_of = plan_of
        #: Host index -> the profile's pages on that host, in the order of their numbers.
        self.placements = _place(config, robots_kinds)

    def group_urls(self, edited: bool) -> list[tuple[str, ...]]:
        """The URLs of the pages of each group, edited ones or the others, in group order."""
        groups: dict[int, list[str]] = {}
        for url, placement in self._urls():
            if placement.decoy < 0 and placement.edited == edited:
                groups.setdefault(placement.group, []).append(url)
        return [tuple(groups[g]) for g in sorted(groups)]

    def decoys(self) -> list[str]:
        """The URLs of the decoys."""
        return [url for url, placement in self._urls() if placement.decoy >= 0]

    def _urls(self) -> list[tuple[str, neardup.Placement]]:
        found = []
        for index in self.placements:
            plan = self._plan_of(index)
            for number, placement in (plan.near_duplicates or {}).items():
                found.append((f"http://{plan.name}{plan.paths[number]}", placement))
        return found

    def home_links(self, index: int, number: int) -> tuple[Link, ...]:
        """Links the profile adds to a home page: its host's /news/ pages; the showcase's (host
        0's) also to the home page of every host that has some."""
        if number != 0:
            return ()
        plan = self._plan_of(index)
        links = [
            Link(plan.paths[n], f"http://{plan.name}{plan.paths[n]}")
            for n in sorted(plan.near_duplicates or ())
        ]
        if index == 0:
            links += [
                Link(f"http://{host_name(i)}/", f"http://{host_name(i)}/")
                for i in self.placements
                if i != 0
            ]
        return tuple(links)

    def page(self, plan: HostPlan, number: int) -> neardup.ArticlePage:
        """The links and body of profile page ``number`` of ``plan``'s host: navigation to
        the home page and the first pages of the host, related links to its other /news/
        pages and to some of its own."""
        assert plan.near_duplicates is not None
        placement = plan.near_duplicates[number]
        own = [n for n in range(1, plan.drawable) if plan.kinds[n] in HTML_KINDS]
        nav = ("/", *(plan.paths[n] for n in own[:6]))
        related = [
            (plan.paths[n], neardup.headline(self.config.seed, other.article_key))
            for n, other in sorted(plan.near_duplicates.items())
            if n != number
        ][:5]
        related += [(plan.paths[n], "") for n in own[6:9]]
        return neardup.article_page(
            self.config.seed, plan.name, plan.paths[number], placement, nav, tuple(related)
        )


def _place(
    config: WebConfig, robots_kinds: list[RobotsKind]
) -> dict[int, tuple[neardup.Placement, ...]]:
    """The profile's pages by host index: on hosts whose robots.txt lets every crawler in
    (normal or missing), the showcase apart; empty with the profile off."""
    if not (config.near_duplicate_groups or config.near_duplicate_edited_groups):
        return {}
    hosts = [
        i
        for i, kind in enumerate(robots_kinds)
        if kind in (RobotsKind.NORMAL, RobotsKind.MISSING) and not showcasing(config, i)
    ]
    return neardup.place(
        config.seed,
        hosts,
        config.near_duplicate_groups,
        config.near_duplicate_group_size,
        config.near_duplicate_decoys_per_group,
        config.near_duplicate_edited_groups,
    )
