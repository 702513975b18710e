"""The changing-web profile: pages that change at known rates, validators, conditional GET,
and pages that go away.

Off by default; ``WebConfig().with_changing_profile()`` turns it on. Then every plain HTML
page of the numbered hosts (``PageKind.HTML``, status 200) is, deterministically from the seed
and its URL, in one change class:

* ``static``: never changes (``change_static_share`` of the pages);
* ``slow``: a new version every ``change_slow_period`` seconds (``change_slow_share``);
* ``fast``: a new version every ``change_fast_period`` seconds (the rest).

Its version at time ``t`` is ``floor((t - change_epoch + phase) / period)`` with a phase of its
own in [0, period): a pure function of the page and the clock, so the server and a test agree
without talking. A new version changes a paragraph of the text (the revision number and a
sentence drawn from it), never the links: the reachable web stays the same.

Validators: a page's answer carries ``ETag`` (strong, from its URL and version) and
``Last-Modified`` (when its current version began; a fixed date for static pages), except on
the ``change_no_etag_host_share`` of the hosts that send Last-Modified only, the
``change_no_validator_host_share`` that send neither, and the ``change_long_etag_host_share``
that send only an ETag of more than 32 characters (a SHA-256 in hex, or an MD5 in hex with
S3's or Netlify's suffix). A GET whose ``If-None-Match`` names the
current tag (weak comparison, RFC 9110 13.1.2; ``*`` matches) is answered ``304 Not
Modified`` with the validators and no body; without If-None-Match, an ``If-Modified-Since``
not before Last-Modified is answered 304 too (an invalid date is ignored, RFC 9110 13.1.3).

Gone pages: ``gone_pages`` pages that other pages link to answer 404 (even positions) or 410
(odd) from ``change_epoch + gone_after`` on.

Live sitemaps: on the ``change_sitemap_host_share`` of the hosts whose robots.txt answers 200,
robots.txt names ``/changes.xml`` (:data:`LIVE_SITEMAP_PATH`), a urlset listing every page of
the host the profile changes, each with its ``lastmod``: when the version served at the time
of the request began (to the second, UTC; 2020-01-01 for static pages). It carries no
validators: it is answered in full at every request.

:class:`ChangingWeb` is the model (the server's answers and a test's truth alike).
"""

from __future__ import annotations

import dataclasses
import datetime
import email.utils
import gzip
import hashlib
import random
import re
from typing import TYPE_CHECKING

from synthweb.model import PageKind, Response

if TYPE_CHECKING:
    from synthweb.graph import SyntheticWeb

__all__ = ["CHANGE_CLASSES", "LIVE_SITEMAP_PATH", "ChangePlan", "ChangingWeb", "GonePage"]

#: The change classes, in the order their shares are drawn.
CHANGE_CLASSES = ("static", "slow", "fast")
#: Last-Modified of static pages (seconds since the epoch: 2020-01-01).
STATIC_MODIFIED = 1_577_836_800
#: The path of a host's live sitemap.
LIVE_SITEMAP_PATH = "/changes.xml"
_SITEMAP_NAMESPACE = "http://www.sitemaps.org/schemas/sitemap/0.9"

_WORDS = (
    "river", "harbour", "lantern", "orchard", "meadow", "signal", "quarry", "beacon", "market",
    "timber", "copper", "willow", "thunder", "compass", "garden", "bridge", "canyon", "meteor",
    "pepper", "velvet", "glacier", "station", "anchor", "saddle", "marble", "falcon",
)  # fmt: skip
_BODY_END = b"</body>"
_TAG = re.compile(r'\s*(W/)?"([^"]*)"\s*')


@dataclasses.dataclass(frozen=True, slots=True)
class ChangePlan:
    """How one page changes and what validators its host sends."""

    change_class: str
    #: Seconds between versions (None: static).
    period: float | None
    #: Seconds added to the clock before dividing by the period (a page's own phase).
    phase: float
    etag: bool
    last_modified: bool
    #: The ETag is a long one (more than 32 characters).
    long_etag: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class GonePage:
    """A page that stops being there: from ``at`` (seconds since the epoch) on it answers
    ``status`` (404 or 410)."""

    url: str
    at: float
    status: int


class ChangingWeb:
    """The changing-web profile of a :class:`~synthweb.graph.SyntheticWeb` (see the module
    docstring): which pages change and how, and the answers that follow."""

    def __init__(self, web: SyntheticWeb) -> None:
        self.web = web
        self.config = web.config
        self._plans: dict[str, ChangePlan | None] = {}
        self._gone: dict[str, GonePage] | None = None
        self._live_sitemaps: dict[str, tuple[str, ...] | None] = {}

    # -- the truth --------------------------------------------------------------------------

    def plan(self, url: str) -> ChangePlan | None:
        """The change plan of canonical ``url``, None for a page the profile leaves alone."""
        if url in self._plans:
            return self._plans[url]
        plan = self._build_plan(url)
        if len(self._plans) > 200_000:
            self._plans.clear()
        self._plans[url] = plan
        return plan

    def change_class(self, url: str) -> str | None:
        """``static``, ``slow`` or ``fast``; None for a page the profile leaves alone."""
        plan = self.plan(url)
        return plan.change_class if plan else None

    def change_period(self, url: str) -> float | None:
        """Seconds between the versions of ``url`` (None: it never changes)."""
        plan = self.plan(url)
        return plan.period if plan else None

    def version_at(self, url: str, t: float) -> int:
        """The version of ``url`` served at ``t`` (seconds since the epoch); 0 if it never
        changes."""
        plan = self.plan(url)
        if plan is None or plan.period is None:
            return 0
        return int((t - self.config.change_epoch + plan.phase) // plan.period)

    def modified_at(self, url: str, t: float) -> int:
        """When the version served at ``t`` began (whole seconds since the epoch; Last-Modified
        is that, rounded down)."""
        plan = self.plan(url)
        if plan is None or plan.period is None:
            return STATIC_MODIFIED
        version = self.version_at(url, t)
        begun = self.config.change_epoch - plan.phase + version * plan.period
        return int(begun)

    def etag_at(self, url: str, t: float) -> str:
        """The ETag of ``url`` at ``t`` (quoted)."""
        token = hashlib.blake2b(url.encode(), digest_size=6).hexdigest()
        version = self.version_at(url, t)
        plan = self.plan(url)
        if plan is not None and plan.long_etag:
            content = f"{url}#{version}".encode()
            form = int(token, 16) % 3
            if form == 0:
                return f'"{hashlib.sha256(content).hexdigest()}"'
            md5 = hashlib.md5(content).hexdigest()
            return f'"{md5}-ssl-df"' if form == 1 else f'"{md5}-{version % 9 + 2}"'
        return f'"{token}-{version}"'

    def body_at(self, url: str, t: float) -> bytes:
        """The uncompressed body of ``url`` served at ``t`` (what a GET at ``t`` receives)."""
        base = self.web.body(url)
        plan = self.plan(url)
        if plan is None or plan.period is None:
            return base
        return _revised(base, url, self.version_at(url, t), self.config.seed)

    def gone_pages(self) -> list[GonePage]:
        """The pages that go away, with when and how."""
        return list(self._gone_pages().values())

    def gone(self, url: str, t: float) -> GonePage | None:
        """The gone page ``url`` if it has gone by ``t``, else None."""
        page = self._gone_pages().get(url)
        return page if page is not None and t >= page.at else None

    def live_sitemap(self, host: str) -> str | None:
        """The URL of the live sitemap ``host``'s robots.txt names, if it names one."""
        return f"http://{host}{LIVE_SITEMAP_PATH}" if self._live_pages(host) is not None else None

    def live_sitemap_body(self, host: str, t: float) -> bytes:
        """The live sitemap of ``host`` as served at ``t``."""
        entries = "".join(
            f"  <url><loc>{url}</loc><lastmod>{_w3c_datetime(self.modified_at(url, t))}"
            "</lastmod></url>\n"
            for url in self._live_pages(host) or ()
        )
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{_SITEMAP_NAMESPACE}">\n'
                f"{entries}</urlset>\n").encode()

    def _live_pages(self, host: str) -> tuple[str, ...] | None:
        """The pages the live sitemap of ``host`` lists; None if it has none."""
        if host in self._live_sitemaps:
            return self._live_sitemaps[host]
        from synthweb.urls import host_index

        pages = None
        index = host_index(host)
        share = self.config.change_sitemap_host_share
        if (index is not None and index < self.config.hosts and share > 0
                and random.Random(f"synthweb:{self.config.seed}:live-sitemap:{index}").random()
                < share and self.web.robots_rules(host).status == 200):
            pages = tuple(sorted(page.url for page in self.web.pages(host)
                                 if self.plan(page.url) is not None))
        self._live_sitemaps[host] = pages
        return pages

    # -- answers ----------------------------------------------------------------------------

    def respond(
        self, base: Response, url: str, t: float, headers: dict[str, str], accept_gzip: bool
    ) -> Response:
        """The answer at ``t`` to a GET of ``url`` whose answer without the profile is
        ``base``, given the request's (lower-case) ``headers``."""
        from synthweb.urls import split_url

        host, path = split_url(url)
        if path in ("/robots.txt", LIVE_SITEMAP_PATH) and self.live_sitemap(host):
            if path == LIVE_SITEMAP_PATH:
                return Response(200, (("Content-Type", "application/xml"),),
                                self.live_sitemap_body(host, t))
            if base.status == 200 and not any(
                    name == "Content-Encoding" for name, _ in base.headers):
                line = f"\nSitemap: {self.live_sitemap(host)}\n".encode()
                return dataclasses.replace(base, body=base.body + line)

        gone = self.gone(url, t)
        if gone is not None:
            body = f"<html><body><h1>{gone.status}</h1></body></html>\n".encode()
            return Response(gone.status, (("Content-Type", "text/html; charset=utf-8"),), body)
        plan = self.plan(url)
        if plan is None or base.status != 200:
            return base
        validators = []
        if plan.etag:
            validators.append(("ETag", self.etag_at(url, t)))
        if plan.last_modified:
            validators.append(("Last-Modified", _http_date(self.modified_at(url, t))))
        if self._not_modified(url, t, plan, headers):
            return Response(304, tuple(validators), b"")
        if plan.period is None:
            return dataclasses.replace(base, headers=base.headers + tuple(validators))
        body = self.body_at(url, t)
        if any(name == "Content-Encoding" for name, _ in base.headers) and accept_gzip:
            body = gzip.compress(body, mtime=0)
        return dataclasses.replace(base, headers=base.headers + tuple(validators), body=body)

    def _not_modified(
        self, url: str, t: float, plan: ChangePlan, headers: dict[str, str]
    ) -> bool:
        if "if-none-match" in headers:
            if not plan.etag:
                return False
            wanted = headers["if-none-match"]
            if wanted.strip() == "*":
                return True
            current = self.etag_at(url, t).strip('"')
            return any(match.group(2) == current for match in _TAG.finditer(wanted))
        if "if-modified-since" in headers and plan.last_modified:
            try:
                since = email.utils.parsedate_to_datetime(headers["if-modified-since"])
            except (TypeError, ValueError, IndexError, OverflowError):
                return False
            if since is None or since.tzinfo is None:
                return False
            return since.timestamp() >= self.modified_at(url, t)
        return False

    # -- building ---------------------------------------------------------------------------

    def _build_plan(self, url: str) -> ChangePlan | None:
        from synthweb.urls import host_index, split_url

        page = self.web.page(url)
        if page is None or page.kind is not PageKind.HTML or page.status != 200:
            return None
        host = split_url(url)[0]
        index = host_index(host)
        if index is None:
            return None
        config = self.config
        rng = random.Random(f"synthweb:{config.seed}:change:{url}")
        draw = rng.random()
        if draw < config.change_static_share:
            change_class, period = "static", None
        elif draw < config.change_static_share + config.change_slow_share:
            change_class, period = "slow", config.change_slow_period
        else:
            change_class, period = "fast", config.change_fast_period
        phase = rng.random() * period if period else 0.0
        host_draw = random.Random(f"synthweb:{config.seed}:validators:{index}").random()
        if host_draw < config.change_no_validator_host_share:
            etag = last_modified = False
        elif host_draw < config.change_no_validator_host_share + config.change_no_etag_host_share:
            etag, last_modified = False, True
        elif host_draw < (config.change_no_validator_host_share + config.change_no_etag_host_share
                          + config.change_long_etag_host_share):
            return ChangePlan(change_class, period, phase, True, False, long_etag=True)
        else:
            etag = last_modified = True
        return ChangePlan(change_class, period, phase, etag, last_modified)

    def _gone_pages(self) -> dict[str, GonePage]:
        if self._gone is None:
            config = self.config
            candidates = sorted(
                page.url
                for host in self.web.host_names()
                for page in self.web.pages(host)
                if not page.url.endswith("/") and self.plan(page.url) is not None
                and self.web.in_links(page.url) > 0
            )
            random.Random(f"synthweb:{config.seed}:gone").shuffle(candidates)
            at = config.change_epoch + config.gone_after
            self._gone = {
                url: GonePage(url, at, 404 if i % 2 == 0 else 410)
                for i, url in enumerate(candidates[: config.gone_pages])
            }
        return self._gone


def _w3c_datetime(seconds: int) -> str:
    return f"{datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}"


def _revised(base: bytes, url: str, version: int, seed: int) -> bytes:
    """``base`` with a paragraph saying which revision it is (before ``</body>``)."""
    rng = random.Random(f"synthweb:{seed}:revision:{url}:{version}")
    sentence = " ".join(rng.choice(_WORDS) for _ in range(12))
    paragraph = f'<p class="revision">Revision {version}: the {sentence}.</p>\n'.encode()
    at = base.rfind(_BODY_END)
    if at < 0:
        return base + paragraph
    return base[:at] + paragraph + base[at:]


def _http_date(seconds: int) -> str:
    return email.utils.formatdate(seconds, usegmt=True)
