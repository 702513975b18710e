"""The model of the synthetic web: hosts, their robots.txt, pages, links and HTTP answers.

Every answer is a pure function of (config, host, path): each host and page draws its details
from its own ``random.Random`` seeded with a string naming it, so the same seed always gives the
same web, in any process and whatever ``PYTHONHASHSEED`` is, and a page is built without the
rest of the web (results are cached for speed only).

A host ``h{i}.synth.test`` serves ``/`` (its home page, linking its first pages), HTML pages
``/p/{n}`` (also under ``/private/``, ``/private/public/``, ``/no-bots/`` and ``/for-bots/``
for robots rules), slow pages ``/slow/{n}``, text ``/t/{n}.txt``, images ``/img/{n}.png``,
redirects ``/r/{n}``, errors ``/e/{n}`` (500), and 404 elsewhere. ``h0`` is the showcase
(``WebConfig.showcase``): one page of every kind, redirect chains and loops and every form of
link, all reached from the seed ``http://h0.synth.test/``. The profiles, each off by default,
add to this web: URL policy (:mod:`synthweb.policy`), sitemaps (:mod:`synthweb.sitemaps`),
near-duplicates (:mod:`synthweb.neardup`), hostile servers (:mod:`synthweb.hostile`); the
multi-domain profile (:mod:`synthweb.domains`) answers in its place.

:class:`SyntheticWeb` answers and caches; its parts are modules of their own (ARCHITECTURE.md,
"Code layout").
"""

from __future__ import annotations

import gzip
import random
from collections.abc import Iterable

from synthweb import changing as changing_web
from synthweb import hostile, policy, profiles, render
from synthweb import sitemaps as sitemap_web
from synthweb.config import WebConfig
from synthweb.domains import UrlKind
from synthweb.hosts import (
    HostPlan,
    assign_robots_kinds,
    assign_sitemap_hosts,
    build_plan,
)
from synthweb.links import draw_links, draw_redirect
from synthweb.model import Link, Page, PageKind, Response
from synthweb.neardup_web import NearDuplicateWeb
from synthweb.policy_web import PolicyWeb, policy_robots
from synthweb.robots import RobotsFile, RobotsKind
from synthweb.truth import DEFAULT_AGENT_TOKEN, ExpectedCrawl, expected_crawl
from synthweb.urls import canonical_url, host_index, host_name, page_identity, split_url

__all__ = ["SyntheticWeb"]


class SyntheticWeb:
    """A deterministic web of ``config.hosts`` hosts: its pages, robots.txt files and answers.

    Thread-safe for reading (caches are filled idempotently). See :mod:`synthweb.truth` for what
    a correct crawler of this web must and must not fetch.
    """

    def __init__(self, config: WebConfig | None = None) -> None:
        self.config = config or WebConfig()
        self._robots_kinds = assign_robots_kinds(self.config)
        self._sitemap_indices = assign_sitemap_hosts(self.config, self._robots_kinds)
        self._plans: dict[int, HostPlan] = {}
        self._pages: dict[tuple[int, int], Page] = {}
        self._responses: dict[tuple[str, str, bool], Response] = {}
        self._profile_robots: dict[str, RobotsFile] = {}
        # Filled on first use.
        self._in_links: dict[str, int] | None = None
        self._near_duplicates = NearDuplicateWeb(self.config, self._robots_kinds, self._plan)
        self._policy = PolicyWeb(self.config, self._robots_kinds, self._plan)
        #: The changing-web profile's model, when it is on.
        self.changing = changing_web.ChangingWeb(self) if self.config.changing else None
        #: The multi-domain profile's model, when it is on (it then answers everything).
        self.domains = profiles.domain_web(self.config) if self.config.multi_domain else None

    # -- hosts and robots.txt ---------------------------------------------------------------

    def host_names(self) -> list[str]:
        """The names of the normal hosts, ``h0.synth.test`` first (see
        :meth:`policy_host_names` for the trap host and the farm); with the multi-domain
        profile, the hosts of real sites."""
        if self.domains is not None:
            return self.domains.host_names()
        return [host_name(i) for i in range(self.config.hosts)]

    def policy_host_names(self) -> list[str]:
        """The hosts of the URL-policy profile: the trap host, then the farm hosts, if on."""
        names = [policy.TRAP_HOST] if self.config.traps else []
        return names + [policy.farm_host_name(i) for i in range(self.config.farm_hosts)]

    def hostile_host_names(self) -> list[str]:
        """The hosts of the hostile profile (:data:`synthweb.hostile.HOSTILE_HOSTS`), if on."""
        return list(hostile.HOSTILE_HOSTS) if self.config.hostile else []

    def sitemap_host_names(self) -> list[str]:
        """The hosts whose robots.txt names sitemaps (sitemap profile): the normal hosts chosen
        for it in index order, then :data:`synthweb.sitemaps.SITEMAP_HOSTS`; empty if off."""
        if not self.config.sitemaps:
            return []
        names = [host_name(i) for i in sorted(self._sitemap_indices)]
        return names + [h for h in sitemap_web.SITEMAP_HOSTS if sitemap_web.robots_sitemaps(h)]

    def robots_sitemaps(self, host: str) -> tuple[str, ...]:
        """The absolute URLs the ``Sitemap:`` lines of the robots.txt of ``host`` name, in order
        (sitemap profile; empty for every host with it off)."""
        if not self.config.sitemaps or not self.is_host(host):
            return ()
        if sitemap_web.is_sitemap_host(host):
            return sitemap_web.robots_sitemaps(host)
        index = host_index(host)
        extra = None if index is None else self._plan(index).sitemaps
        return extra.named if extra else ()

    def sitemap_document(self, url: str) -> tuple[str, tuple[str, ...]] | None:
        """(format, listed URLs) of the sitemap document at canonical ``url`` (sitemap profile):
        format ``urlset``, ``gzip-urlset`` or ``text`` lists pages, ``index`` lists sitemaps.
        None if ``url`` is no sitemap (or the profile is off)."""
        host = split_url(url)[0]
        if not self.config.sitemaps or not self.is_host(host):
            return None
        if sitemap_web.is_sitemap_host(host):
            return sitemap_web.DOCUMENTS.get(url)
        index = host_index(host)
        extra = None if index is None else self._plan(index).sitemaps
        return extra.documents.get(url) if extra else None

    def is_host(self, host: str) -> bool:
        """Whether ``host`` (lower-case, no port) is a host of this web (profile hosts too)."""
        if self.domains is not None:
            return self.domains.is_host(host)
        index = host_index(host)
        if index is not None:
            return index < self.config.hosts
        if self.config.hostile and hostile.is_hostile_host(host):
            return True
        if self.config.sitemaps and sitemap_web.is_sitemap_host(host):
            return True
        return self._is_policy_host(host)

    def _is_policy_host(self, host: str) -> bool:
        if host == policy.TRAP_HOST:
            return self.config.traps
        index = policy.farm_host_index(host)
        return index is not None and index < self.config.farm_hosts

    def hosts_with_robots(self, kind: RobotsKind) -> list[str]:
        """The hosts whose robots.txt is of ``kind``, in index order."""
        return [host_name(i) for i, k in enumerate(self._robots_kinds) if k is kind]

    def robots_rules(self, host: str) -> RobotsFile:
        """The robots.txt of ``host`` and its meaning. An unknown host gives the proxy's 502."""
        if not self.is_host(host):
            body = f"502 Bad Gateway: cannot resolve {host}\n".encode()
            return RobotsFile(
                host, RobotsKind.UNAVAILABLE, "unknown-host", 502, "text/plain", body, ()
            )
        if self.domains is not None:
            return self.domains.robots(host)
        if host_index(host) is None and sitemap_web.is_sitemap_host(host):
            return profiles.sitemap_robots(host)
        if host_index(host) is None:
            robots = self._profile_robots.get(host)
            if robots is None:
                robots = self._profile_robots[host] = (
                    profiles.hostile_robots(host) if hostile.is_hostile_host(host)
                    else policy_robots(host)
                )
            return robots
        return self._plan(host).robots

    # -- pages ------------------------------------------------------------------------------

    def page(self, url: str) -> Page | None:
        """The page at canonical ``url``, or None if nothing is there (404, or 502 off the web)."""
        host, path = split_url(url)
        if not self.is_host(host):
            return None
        if self.domains is not None:
            return profiles.domain_page(self.domains, url)
        if host_index(host) is None:
            if hostile.is_hostile_host(host):
                return profiles.hostile_page(host, path)
            if sitemap_web.is_sitemap_host(host):
                return profiles.sitemap_page(host, path)
            return self._policy.page(host, path)
        plan = self._plan(host)
        number = plan.numbers.get(path)
        if number is None and plan.sitemaps is not None:
            return profiles.host_sitemap_page(plan.sitemaps, path)
        return None if number is None else self._page(plan.index, number)

    def pages(self, host: str) -> list[Page]:
        """All pages of ``host``, home page first (a farm host's too; the trap host has no end,
        so it raises ValueError)."""
        if host == policy.TRAP_HOST:
            raise ValueError(f"{host} has infinitely many pages")
        if self.domains is not None:
            return self._domain_pages(host)
        if self.config.hostile and hostile.is_hostile_host(host):
            return [p for p in map(profiles.hostile_page, [host] * 99, hostile.paths(host)) if p]
        if self.config.sitemaps and sitemap_web.is_sitemap_host(host):
            found = (profiles.sitemap_page(host, q) for q in sitemap_web.paths(host))
            return [page for page in found if page]
        farm = policy.farm_host_index(host)
        if farm is not None and farm < self.config.farm_hosts:
            return [self._policy.farm_page(farm, n) for n in range(self.config.farm_pages_per_host)]
        plan = self._plan(host)
        pages = [self._page(plan.index, n) for n in range(len(plan.paths))]
        if plan.sitemaps is not None:
            extra = plan.sitemaps
            added = (profiles.host_sitemap_page(extra, path) for path in extra.paths())
            pages += [page for page in added if page]
        return pages

    def status(self, url: str) -> int:
        """The HTTP status a GET of canonical ``url`` answers."""
        host, path = split_url(url)
        if not self.is_host(host):
            return 502
        if path == "/robots.txt":
            return self.robots_rules(host).status
        page = self.page(url)
        return page.status if page else 404

    def seeds(self, count: int | None = None) -> list[str]:
        """Home pages of the first ``count`` hosts (all hosts if None): a reasonable seed list.
        With the multi-domain profile: of ``count`` hosts in a seeded order
        (``multi_domain_seed_sites`` if None)."""
        if self.domains is not None:
            return self.domains.seeds(count)
        hosts = self.config.hosts if count is None else min(count, self.config.hosts)
        return [f"http://{host_name(i)}/" for i in range(hosts)]

    # -- the multi-domain profile -----------------------------------------------------------

    def url_kind(self, url: str) -> UrlKind:
        """What canonical ``url`` is on the multi-domain web: a real page, a redirect, a 404,
        robots.txt, off the web, or junk (:class:`synthweb.domains.UrlKind`)."""
        if self.domains is None:
            raise ValueError("url_kind needs the multi-domain profile")
        return self.domains.kind(url)

    def _domain_pages(self, host: str) -> list[Page]:
        """The real pages of a host of the multi-domain web (a farm host has no end)."""
        assert self.domains is not None
        if host in self.domains.farm_host_names():
            raise ValueError(f"{host} has infinitely many pages")
        prefix = f"http://{host}/"
        pages = (self.page(u) for u in self.domains.legit_urls() if u.startswith(prefix))
        return [page for page in pages if page is not None]

    # -- the URL-policy profile -------------------------------------------------------------

    def page_identity(self, url: str) -> str | None:
        """The canonical identity of ``url`` in any spelling (:func:`synthweb.urls.page_identity`),
        e.g. of the URL of a request log record; None if it is no ``http://`` URL."""
        return page_identity(url)

    def is_trap(self, url: str) -> bool:
        """Whether ``url`` (any spelling) is in the trap areas (:func:`synthweb.policy.is_trap`)."""
        return policy.is_trap(url)

    def is_farm(self, url: str) -> bool:
        """Whether ``url`` (any spelling) is in the link farm (:func:`synthweb.policy.is_farm`)."""
        return policy.is_farm(url)

    def trap_entry_points(self) -> frozenset[str]:
        """The trap URLs the normal web links to (empty with ``traps`` off)."""
        if not self.config.traps:
            return frozenset()
        return frozenset(f"http://{policy.TRAP_HOST}{p}" for p in policy.TRAP_ENTRY_PATHS)

    def farm_entry_points(self) -> frozenset[str]:
        """The farm URLs the normal web links to (empty with no farm)."""
        return frozenset(
            url
            for links in self._policy.extras().values()
            for _, url in links
            if policy.is_farm(url)
        )

    def popular_pages(self) -> list[str]:
        """The pages ``popular_pages`` makes popular, most linked first."""
        return self._policy.popular_pages()

    def in_links(self, url: str) -> int:
        """How many hosts other than its own have a page linking to ``url`` (any spelling).

        Counted over every HTML page of the normal hosts, reachable or not; farm and trap pages
        are not counted. :attr:`synthweb.truth.PolicyTruth.in_links` counts only the pages a
        crawl fetches. The first call builds every page of the web.
        """
        if self._in_links is None:
            sources: dict[str, set[str]] = {}
            for host in self.host_names():
                for page in self.pages(host):
                    for link in page.links:
                        if link.url and split_url(link.url)[0] != host:
                            sources.setdefault(link.url, set()).add(host)
            self._in_links = {target: len(hosts) for target, hosts in sources.items()}
        identity = page_identity(url)
        return self._in_links.get(identity, 0) if identity else 0

    # -- the near-duplicate profile ---------------------------------------------------------

    def near_duplicate_groups(self) -> list[tuple[str, ...]]:
        """The near-duplicate groups (:mod:`synthweb.neardup`): for each, the URLs of its pages,
        one article (the same words) in the boilerplate of several hosts, with its own date,
        counters, advertisement, tracking parameters and markup on each page; empty with the
        profile off. Every other page of the web, decoys and edited groups included, is a
        near-duplicate of none of them."""
        return self._near_duplicates.group_urls(edited=False)

    def near_duplicate_edited_groups(self) -> list[tuple[str, ...]]:
        """The edited groups: as :meth:`near_duplicate_groups`, and besides one to four words
        of the article changed on every copy after the first (``near_duplicate_edited_groups``
        of the configuration); a near-duplicate of none of the other pages."""
        return self._near_duplicates.group_urls(edited=True)

    def near_duplicate_decoys(self) -> list[str]:
        """The decoys of the near-duplicate profile: pages with the boilerplate of a group's
        pages and an article of their own (near-duplicates of nothing); empty with it off."""
        return self._near_duplicates.decoys()

    def spellings(self, url: str) -> list[str]:
        """``url`` (canonical, on a host of this web) in every spelling of
        :data:`synthweb.policy.VARIANT_FORMS`, absolute, in that order (the forms that do not
        apply to it fall back to others, so some may repeat)."""
        rng = random.Random(f"synthweb:{self.config.seed}:spellings:{url}")
        return [policy.variant_href(f, url, rng, same_host=False) for f in policy.VARIANT_FORMS]

    def expected_crawl(
        self, seeds: Iterable[str], agent_token: str = DEFAULT_AGENT_TOKEN
    ) -> ExpectedCrawl:
        """What a correct polite crawl from ``seeds`` as ``agent_token`` fetches and avoids.

        See :mod:`synthweb.truth`.
        """
        return expected_crawl(self, seeds, agent_token)

    # -- answers ----------------------------------------------------------------------------

    def respond(self, host: str, path: str, *, accept_gzip: bool = False) -> Response:
        """What the server answers to a GET of ``path`` on ``host`` (lower-case, no port)."""
        key = (host, path, accept_gzip)
        response = self._responses.get(key)
        if response is None:
            response = self._build_response(host, path, accept_gzip)
            if len(self._responses) > 100_000:
                self._responses.clear()
            self._responses[key] = response
        return response

    def body(self, url: str) -> bytes:
        """The uncompressed body served for canonical ``url``."""
        host, path = split_url(url)
        return self.respond(host, path).body

    # -- building ---------------------------------------------------------------------------

    def _plan(self, host: str | int) -> HostPlan:
        index = host if isinstance(host, int) else host_index(host)
        if index is None or not 0 <= index < self.config.hosts:
            raise KeyError(f"{host!r} is not a host of this web")
        plan = self._plans.get(index)
        if plan is None:
            plan = self._plans[index] = build_plan(
                self.config, index, self._robots_kinds, self._near_duplicates.placements,
                self._sitemap_indices,
            )
        return plan

    def _page(self, index: int, number: int) -> Page:
        page = self._pages.get((index, number))
        if page is None:
            page = self._pages[(index, number)] = self._build_page(index, number)
        return page

    def _build_page(self, index: int, number: int) -> Page:
        plan = self._plan(index)
        kind = plan.kinds[number]
        url = f"http://{plan.name}{plan.paths[number]}"
        if plan.near_duplicates and number in plan.near_duplicates:
            links = tuple(Link(*pair) for pair in self._near_duplicates.page(plan, number).links)
            return Page(url, kind, 200, "text/html; charset=utf-8", links=links)
        rng = random.Random(f"synthweb:{self.config.seed}:page:{index}:{number}")
        if kind is PageKind.REDIRECT:
            status, location = draw_redirect(self.config, rng, plan, number, self._plan)
            return Page(
                url,
                kind,
                status,
                "text/html; charset=utf-8",
                location=location,
                redirect_to=canonical_url(location, url),
            )
        if kind is PageKind.ERROR:
            return Page(url, kind, 500, "text/html; charset=utf-8")
        if kind is PageKind.TEXT:
            return Page(url, kind, 200, "text/plain; charset=utf-8")
        if kind is PageKind.BINARY:
            return Page(url, kind, 200, "image/png")
        content_type = {
            PageKind.LATIN1_HTML: "text/html; charset=ISO-8859-1",
            PageKind.CP1251_HTML: "text/html",
        }.get(kind) or rng.choice(
            ("text/html; charset=utf-8",) * 5 + ("text/html;charset=UTF-8", "text/html")
        )
        delay = 0.0
        if kind is PageKind.SLOW_HTML:
            delay = round(rng.uniform(*self.config.slow_delay_range), 3)
        links = draw_links(self.config, rng, plan, number, url, self._plan)
        if self.config.url_policy_on:
            links = self._policy.links(plan, number, url, links)
        if self.config.hostile and index == 0 and number == 0:
            links += tuple(Link(href, target) for href, target in hostile.entry_links())
        if self.config.sitemaps and index == 0 and number == 0:
            links += (Link(sitemap_web.ENTRY_URL, sitemap_web.ENTRY_URL),)
        if self._near_duplicates.placements:
            links += self._near_duplicates.home_links(index, number)
        gzipped = rng.random() < self.config.gzip_share
        return Page(url, kind, 200, content_type, links=links, delay=delay, gzip=gzipped)

    def _build_response(self, host: str, path: str, accept_gzip: bool) -> Response:
        if self.domains is not None:
            return Response(*self.domains.response(host, path))
        if self.config.hostile and hostile.is_hostile_host(host):
            return profiles.hostile_response(self.config, host, path)
        if self.config.sitemaps and sitemap_web.is_sitemap_host(host):
            return Response(*sitemap_web.response(host, path))
        if not self.is_host(host):
            body = f"502 Bad Gateway: cannot resolve {host}\n".encode()
            return Response(502, (("Content-Type", "text/plain; charset=utf-8"),), body)
        if self.config.url_variant_share > 0:
            # Every spelling of a URL gets the page of its identity.
            identity = page_identity(f"http://{host}{path}")
            if identity is not None:
                path = split_url(identity)[1]
        if path == "/robots.txt":
            robots = self.robots_rules(host)
            return Response(robots.status, (("Content-Type", robots.content_type),), robots.body)
        if self._sitemap_indices and host_index(host) in self._sitemap_indices:
            extra = self._plan(host).sitemaps
            answer = extra.response(path) if extra else None
            if answer is not None:
                return Response(*answer)
        page = self.page(f"http://{host}{path}")
        if page is None:
            return Response(404, (("Content-Type", "text/html; charset=utf-8"),), render.ERROR_404)
        headers = [("Content-Type", page.content_type)]
        if page.kind is PageKind.REDIRECT:
            assert page.location is not None
            headers.append(("Location", page.location))
            body = render.MOVED
            return Response(page.status, tuple(headers), body)
        if page.kind is PageKind.ERROR:
            return Response(500, tuple(headers), render.ERROR_500)
        body = self._render(page)
        if page.gzip:
            headers.append(("Vary", "Accept-Encoding"))
            if accept_gzip:
                headers.append(("Content-Encoding", "gzip"))
                body = gzip.compress(body, mtime=0)
        return Response(page.status, tuple(headers), body, page.delay)

    def _render(self, page: Page) -> bytes:
        host, path = split_url(page.url)
        index = host_index(host)
        if index is None:
            return render.render_profile_page(page)
        plan = self._plan(host)
        number = plan.numbers[path]
        if plan.near_duplicates and number in plan.near_duplicates:
            return self._near_duplicates.page(plan, number).body
        return render.render_page(self.config.seed, page, index, number)
