"""How the pages of the hosts ``h{i}.synth.test`` link: the links each HTML page draws, the
forms its hrefs are written in (root-relative, relative, absolute, upper-case, with the port,
protocol-relative, ...), junk references, and where redirects lead.

A page draws its links from its own generator (see :mod:`synthweb.graph`); the canonical URL
each link resolves to is known as it is drawn, and the unit tests check that
:func:`synthweb.urls.canonical_url` of the href as written gives the same.
"""

from __future__ import annotations

import posixpath
import random

from synthweb.config import WebConfig
from synthweb.hosts import SHOWCASE_PAGES, SHOWCASE_REDIRECTS, HostPlan, PlanOf, showcasing
from synthweb.model import Link
from synthweb.urls import host_name, nohost_name

__all__ = ["draw_links", "draw_redirect"]

# How links are written; the forms in _SAME_HOST_ONLY are relative to the page's own host.
_SAME_HOST_FORMS = ("root",) * 3 + ("absolute",) * 2 + (
    "relative", "dot-relative", "fragment", "absolute-fragment", "upper", "port",
    "protocol-relative",
)  # fmt: skip
_CROSS_HOST_FORMS = ("absolute",) * 3 + ("absolute-fragment", "upper", "port", "protocol-relative")
_ALL_FORMS = (
    "root", "relative", "dot-relative", "fragment", "absolute", "absolute-fragment", "upper",
    "port", "protocol-relative", "bare-home",
)  # fmt: skip
_SAME_HOST_ONLY = frozenset({"root", "relative", "dot-relative", "fragment"})


def draw_redirect(
    config: WebConfig, rng: random.Random, plan: HostPlan, number: int, plan_of: PlanOf
) -> tuple[int, str]:
    """(status, Location as written) of redirect page ``number`` of ``plan``'s host: the
    showcase's fixed ones, else to a page of the host or, at times, of another host."""
    if showcasing(config, plan.index) and number in SHOWCASE_REDIRECTS:
        status, template = SHOWCASE_REDIRECTS[number]
        other = host_name(1 if config.hosts > 1 else 0)
        return status, template.format(host=plan.name, other=other)
    status = rng.choice((301, 302, 307, 308))
    if config.hosts > 1 and rng.random() < 0.35:
        target = plan_of(_other_host(config, rng, plan.index))
        path = target.paths[rng.randrange(target.drawable)]
        return status, f"http://{target.name}{path}"
    path = plan.paths[rng.choice([n for n in range(plan.drawable) if n != number])]
    return status, path if rng.random() < 0.5 else f"http://{plan.name}{path}"


def _other_host(config: WebConfig, rng: random.Random, index: int) -> int:
    other = rng.randrange(config.hosts - 1)
    return other + 1 if other >= index else other


def draw_links(
    config: WebConfig, rng: random.Random, plan: HostPlan, number: int, url: str,
    plan_of: PlanOf,
) -> tuple[Link, ...]:
    """The ``<a href>`` links of HTML page ``number`` (at ``url``) of ``plan``'s host, drawn
    from ``rng``: a home page's links to its host first, then links to pages of its host and of
    others (``plan_of`` gives another host's plan), dead links, junk and hosts off the web."""
    source = plan.paths[number]
    # (href as written, canonical URL it resolves to; None for junk)
    drawn: list[tuple[str, str | None]] = []
    if number == 0:
        drawn += _home_links(config, rng, plan)
    mean = config.outlinks_per_page
    dead = config.dead_link_share
    junk = dead + config.junk_link_share
    nohost = junk + config.nohost_link_share
    for _ in range(rng.randint(max(1, mean - mean // 2), mean + mean // 2)):
        roll = rng.random()
        if roll < dead:
            path = f"/missing/{rng.randrange(4)}"
            drawn.append((path, f"http://{plan.name}{path}"))
        elif roll < junk:
            drawn.append((rng.choice(_junk_hrefs(plan.name)), None))
        elif roll < nohost:
            target = f"http://{nohost_name(rng.randrange(3))}/p/{rng.randrange(10)}"
            drawn.append((target, target))
        elif config.hosts > 1 and rng.random() < config.cross_host_link_share:
            other = plan_of(_other_host(config, rng, plan.index))
            path = other.paths[rng.randrange(other.drawable)]
            form = rng.choice(_CROSS_HOST_FORMS)
            drawn.append(
                (_write_href(form, source, other.name, path), f"http://{other.name}{path}")
            )
        else:
            path = plan.paths[rng.randrange(plan.drawable)]
            form = rng.choice(_SAME_HOST_FORMS)
            drawn.append(
                (_write_href(form, source, plan.name, path), f"http://{plan.name}{path}")
            )
    # The target is known as drawn; resolving every href here would triple the cost of a
    # page, so the unit tests check instead that canonical_url(href, page) gives the same.
    return tuple(
        Link(href, target if target is not None else _junk_target(href, url))
        for href, target in drawn
    )


def _home_links(
    config: WebConfig, rng: random.Random, plan: HostPlan
) -> list[tuple[str, str | None]]:
    """The home page links to the first pages of its host; the showcase's to everything."""
    own = plan.name
    if not showcasing(config, plan.index):
        return [
            (_write_href(rng.choice(_SAME_HOST_FORMS), "/", own, path), f"http://{own}{path}")
            for path in plan.paths[1 : min(9, plan.drawable)]
        ]
    drawn = [
        (_write_href(_ALL_FORMS[n % len(_ALL_FORMS)], "/", own, path), f"http://{own}{path}")
        for n, path in enumerate(plan.paths[1 : len(SHOWCASE_PAGES) + 1], start=1)
    ]
    drawn += [(_write_href(form, "/", own, "/p/1"), f"http://{own}/p/1") for form in _ALL_FORMS]
    drawn += [("/missing/1", f"http://{own}/missing/1")]
    drawn += [(f"http://{nohost_name(0)}/p/1", f"http://{nohost_name(0)}/p/1")]
    drawn += [(href, None) for href in _junk_hrefs(own)]
    if config.hosts > 1:
        other = host_name(1)
        drawn += [
            (_write_href(form, "/", other, "/"), f"http://{other}/")
            for form in _ALL_FORMS
            if form not in _SAME_HOST_ONLY
        ]
    return drawn


def _junk_target(href: str, page_url: str) -> str | None:
    """An empty or fragment-only reference points to the page itself; the others nowhere."""
    return page_url if href in ("", "#top") else None


def _junk_hrefs(host: str) -> list[str]:
    """References that are no crawlable URL (and two to the page itself), as a page of
    ``host`` writes them."""
    return [
        f"mailto:webmaster@{host}",
        "javascript:void(0)",
        "tel:+1-555-0100",
        "",
        "#top",
        "http://[bad",
        f"ftp://{host}/pub/file.txt",
        "data:text/plain,hello",
    ]


def _write_href(form: str, source: str, host: str, path: str) -> str:
    """Write a link to ``http://{host}{path}`` from page ``source`` (same host for some forms)."""
    if form in ("relative", "dot-relative"):
        relative = posixpath.relpath(path, posixpath.dirname(source))
        if path.endswith("/") and not relative.endswith("/"):
            relative += "/"
        if form == "dot-relative" and not relative.startswith(".."):
            relative = "./" + relative
        return relative
    return {
        "root": path,
        "fragment": f"{path}#section-2",
        "absolute": f"http://{host}{path}",
        "absolute-fragment": f"http://{host}{path}#top",
        "upper": f"HTTP://{host.upper()}{path}",
        "port": f"http://{host}:80{path}",
        "protocol-relative": f"//{host}{path}",
        "bare-home": f"http://{host}" if path == "/" else f"http://{host}{path}",
    }[form]

