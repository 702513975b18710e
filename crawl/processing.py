"""The process stage's work on one fetch outcome: archive it, log it, route what it found.

For every outcome :class:`PageProcessor` writes the WARC request/response pair (when there was
an HTTP response, with a ``metadata`` record), one crawl log line, and returns the loop lines
to send round: the page's outlinks (or its redirect target) grouped by vnode, plus the page's
own outcome in the line of its own vnode, for the crawl DB. Links this subtask sent lately are
dropped first (:class:`RecentUrls`), then the URL policy (:mod:`crawl.urls.scope`) decides which
enter the crawl.
Each line gets a unique id: ``producer_id`` (unique per subtask attempt) and a sequence number.
robots.txt fetches (hop ``P``, the prerequisite of a host) are archived and logged but are not
pages: they have no outcome in the crawl DB, and their only loop lines carry the sitemaps their
``Sitemap:`` lines name (hop ``S``). A sitemap document (:mod:`crawl.content.sitemaps`) is read as
one: its child sitemaps (``S``) and listed URLs (``M``) are what it found. Each archived response
gets a ``metadata`` record next to it (:func:`metadata_fields`: via, hops, fetch time, the
page's robots directives and canonical URL, and the URLs it led to). A page's outlinks come
from :class:`crawl.content.links.LinkExtractor` with their own hop: ``L`` a link, ``E`` an embed,
``R`` a meta refresh (like a redirect's). A response whose payload was archived before
(``captures``, by payload digest) is written as a ``revisit`` record referring to that first
capture. With ``scope.path_ascending`` a page that answered also brings the directories above
it (hop ``I``). With near-duplicate detection on, an archived HTML page (not a revisit) gets
the simhash of its main text (:mod:`crawl.content.neardup`) in its metadata record, and probes
of the near-duplicate index with its fingerprint and the links it sent
(:attr:`PageProcessor.near_probes`, :mod:`crawl.content.neardup_index`). In a continuous crawl
(``recrawl``) a page's outcome carries its revisit (:class:`crawl.crawldb.recrawl.Revisit`:
the recrawl state it was fetched with and what the fetch saw: the content digest and
validators, or a 304), and a 304 Not Modified is archived as a ``revisit`` record with the
server-not-modified profile referring to the URL's last capture; it has no links (they were
taken from that capture).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Protocol

from crawl.archive.crawl_log import CrawlLogWriter
from crawl.archive.warc import (
    NOT_MODIFIED_PROFILE,
    REVISIT_PROFILE,
    Capture,
    WarcFileWriter,
    iso_timestamp_ms,
    sha1_digest,
)
from crawl.config import (
    Config,
    NearDupSection,
    ParseSection,
    ScopeSection,
    SitemapsSection,
    UrlsSection,
    UserAgentSection,
    WarcSection,
)
from crawl.content.links import LinkExtractor, ParsedLinks
from crawl.content.neardup import fingerprint as fingerprint_of
from crawl.content.neardup_index import IndexLayout, page_probes
from crawl.content.neardup_judge import NearQuery
from crawl.content.sitemaps import (
    SitemapEntry,
    parse_sitemap,
    sitemaps_in_robots,
)
from crawl.content.soft404 import is_soft_404
from crawl.crawldb.recrawl import (
    CHANGEFREQ_SECONDS,
    Observation,
    RecrawlState,
    Revisit,
    digest64,
    is_refetch,
    parse_lastmod,
)
from crawl.hops import (
    INFERRED,
    REDIRECT,
    SITEMAP,
    SITEMAP_LISTED,
    is_not_found_probe,
    is_prerequisite,
    is_sitemap_hops,
    sitemap_level,
    way_found,
)
from crawl.http.client import NOT_MODIFIED
from crawl.loop.records import DoneEvent, FoundUrl, encode_line, url_vnode
from crawl.model import FetchResult
from crawl.progress import StageStatus
from crawl.stages import (
    PROCESS_BYTES,
    PROCESS_FETCHES_DISCOVERY,
    PROCESS_FETCHES_REFRESH,
    PROCESS_FOUND_BY,
    PROCESS_LINKS_FOUND,
    PROCESS_LINKS_HELD_CASH,
    PROCESS_LINKS_RECENT,
    PROCESS_LINKS_REJECTED,
    PROCESS_LINKS_SOFT_404,
    PROCESS_NEARDUP_QUERIES,
    PROCESS_NOT_FOUND_PROBES,
    PROCESS_PAGES,
    PROCESS_PAGES_SOFT_404,
    PROCESS_WARC_NOT_MODIFIED,
    PROCESS_WARC_REVISITS,
)
from crawl.status import SOFT_404_REASON, Status
from crawl.urls.normalize import (
    DEFAULT_NORMALIZER,
    UrlError,
    UrlNormalizer,
    host_of,
    parent_directories,
)
from crawl.urls.priority import CASH_DIGITS, CashLevel, link_cash
from crawl.urls.scope import UrlPolicy, registered_domain

__all__ = [
    "DUPLICATE_REASON",
    "REPETITIVE_REASON",
    "CaptureStore",
    "PageProcessor",
    "ProcessSettings",
    "RecentUrls",
    "metadata_fields",
    "payload_key",
]

#: The reason of a page's outcome when its payload was archived before under another URL.
DUPLICATE_REASON = "duplicate:payload"
#: The outcome's reason of a page whose main text says a few words over and over
#: (:attr:`crawl.content.neardup.Fingerprint.repetitive`).
REPETITIVE_REASON = "thin:repeated-words"

_DEFAULTS = Config()


class RecentUrls:
    """URLs this subtask sent to the crawl DB lately: a bounded set in two generations, and the
    cash their repeats brought meanwhile.

    Mercator's lesson: most links point to a few popular pages, so a small cache in front of
    the URL-seen test drops most repeats before they cost a loop record and a state lookup.
    What a dropped repeat brings to its URL's cash (:mod:`crawl.urls.priority`) is held and
    sent as one found URL per URL at most every ``hold_seconds``: a popular page gets the cash
    of every link to it in a few records. Held cash lives in memory only (a failure loses at
    most ``hold_seconds`` of it: an estimate, not a record).
    Holds between ``capacity / 2`` and ``capacity`` URLs; lookups and inserts are O(1).
    """

    def __init__(self, capacity: int, hold_seconds: float = 1.0) -> None:
        self._half = max(1, capacity // 2) if capacity > 0 else 0
        self._current: set[str] = set()
        self._previous: set[str] = set()
        self._held: dict[str, tuple[FoundUrl, float]] = {}
        self._hold_seconds = hold_seconds
        self._last_release: float | None = None

    def hold(self, item: FoundUrl, cash: float) -> None:
        """Keep the cash a dropped repeat of ``item``'s URL brought, to send later. O(1)."""
        if cash <= 0:
            return
        held = self._held.get(item[0])
        self._held[item[0]] = (held[0] if held else item, (held[1] if held else 0.0) + cash)

    def release(self, now: float) -> list[tuple[FoundUrl, float]]:
        """The held cash, per URL with the first repeat's hops and via, once ``hold_seconds``
        passed since the last release (else nothing); forgets it."""
        if self._last_release is None:
            self._last_release = now
        if not self._held or now - self._last_release < self._hold_seconds:
            return []
        self._last_release = now
        held, self._held = list(self._held.values()), {}
        return held

    def add(self, url: str) -> bool:
        """Remember ``url``; False if it was already remembered (a repeat to drop)."""
        if not self._half:
            return True
        if url in self._current or url in self._previous:
            return False
        self._current.add(url)
        if len(self._current) >= self._half:
            self._previous, self._current = self._current, set()
        return True


@dataclasses.dataclass(frozen=True)
class ProcessSettings:
    """What the process stage is configured by: the sections of the archive, the URL policy
    and the link extraction, and the settings of other sections it applies."""

    warc: WarcSection
    user_agent: UserAgentSection
    urls: UrlsSection
    scope: ScopeSection
    parse: ParseSection
    sitemaps: SitemapsSection
    #: ``crawl.vnodes``: where each found URL goes round the loop.
    vnodes: int
    #: ``crawl.recent_urls``: the size of :class:`RecentUrls`.
    recent_urls: int
    #: ``neardup.enabled``: whether archived pages are queried for near-duplicates...
    near_duplicates: bool
    #: ...and the ``neardup`` section: the index's tables, which pages are short.
    neardup: NearDupSection
    #: ``recrawl.enabled``: whether outcomes carry their revisit.
    recrawl: bool
    #: ``neardup.min_features`` under ``recrawl.change_distance``, else 0: the fewest
    #: features of a page whose change is judged by simhash.
    change_features: int
    #: ``priority.flow``: what a fetched page passes on to its links.
    flow: str = _DEFAULTS.priority.flow

    @classmethod
    def from_config(cls, config: Config) -> ProcessSettings:
        return cls(
            warc=config.warc,
            user_agent=config.user_agent,
            urls=config.urls,
            scope=config.scope,
            parse=config.parse,
            sitemaps=config.sitemaps,
            vnodes=config.crawl.vnodes,
            recent_urls=config.crawl.recent_urls,
            near_duplicates=config.neardup.enabled,
            neardup=config.neardup,
            recrawl=config.recrawl.enabled,
            change_features=config.neardup.min_features if config.recrawl.change_distance else 0,
            flow=config.priority.flow,
        )


class PageProcessor:
    """Archives, logs and routes fetch outcomes of one subtask (not thread-safe)."""

    @classmethod
    def from_settings(
        cls,
        settings: ProcessSettings,
        warc: WarcFileWriter,
        crawl_log: CrawlLogWriter,
        status: StageStatus,
        producer_id: str,
        captures: CaptureStore | None,
        near_duplicates: bool,
    ) -> PageProcessor:
        """The processor of the stage's settings: its URL policy, normaliser (one, shared
        with the link extractor and its cache), sitemaps, archive and recrawl settings.
        ``captures`` is used when ``warc.revisits`` is on; ``near_duplicates`` says whether the
        near-duplicate stage runs."""
        normalizer = UrlNormalizer.from_section(settings.urls)
        return cls(
            warc,
            crawl_log,
            settings.vnodes,
            status,
            producer_id=producer_id,
            recent_urls=settings.recent_urls,
            policy=UrlPolicy(settings.scope),
            normalizer=normalizer,
            links=LinkExtractor.from_section(settings.parse, settings.user_agent.product,
                                             normalizer),
            sitemaps=settings.sitemaps,
            path_ascending=settings.scope.path_ascending,
            metadata_records=settings.warc.metadata_records,
            captures=captures if settings.warc.revisits else None,
            dedup_min_bytes=settings.warc.revisit_min_bytes,
            near_duplicates=near_duplicates and settings.near_duplicates,
            neardup=settings.neardup,
            recrawl=settings.recrawl,
            change_features=settings.change_features,
            flow=settings.flow,
        )

    def __init__(
        self,
        warc: WarcFileWriter,
        crawl_log: CrawlLogWriter,
        vnodes: int,
        status: StageStatus,
        producer_id: str,
        recent_urls: int = _DEFAULTS.crawl.recent_urls,
        policy: UrlPolicy | None = None,
        normalizer: UrlNormalizer = DEFAULT_NORMALIZER,
        sitemaps: SitemapsSection | None = None,
        path_ascending: bool = _DEFAULTS.scope.path_ascending,
        metadata_records: bool = _DEFAULTS.warc.metadata_records,
        captures: CaptureStore | None = None,
        dedup_min_bytes: int = _DEFAULTS.warc.revisit_min_bytes,
        links: LinkExtractor | None = None,
        near_duplicates: bool = False,
        neardup: NearDupSection = _DEFAULTS.neardup,
        recrawl: bool = False,
        change_features: int = 0,
        flow: str = _DEFAULTS.priority.flow,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._warc = warc
        self._log = crawl_log
        self._vnodes = vnodes
        # With "shares" every fetched page passes on one share, whatever cash it had.
        self._shares = flow == "shares"
        self._status = status
        self._producer_id = producer_id
        self._lines = 0
        self._recent = RecentUrls(recent_urls)
        self._level = CashLevel()
        self._clock = clock
        self._policy = policy
        self._normalizer = normalizer
        self._sitemaps = sitemaps if sitemaps is not None and sitemaps.enabled else None
        self._path_ascending = path_ascending
        self._metadata_records = metadata_records
        self._captures = captures
        self._dedup_min_bytes = dedup_min_bytes
        self._links = links if links is not None else LinkExtractor(normalizer=normalizer)
        self._near_duplicates = near_duplicates
        self._near_index = IndexLayout.from_section(neardup)
        self._near_min_features = neardup.min_features
        self._near_min_exact_features = neardup.min_exact_features
        self._recrawl = recrawl
        # Above 0 (recrawl.change_distance): a page with at least this many features tells
        # the recrawl schedule its main text's simhash instead of its payload digest.
        self._change_features = change_features if recrawl else 0
        # Recrawl interval hints of the URLs the sitemap being read lists (its changefreq, or
        # the time since its lastmod), and their lastmod (s).
        self._hints: dict[str, int] = {}
        self._lastmods: dict[str, int] = {}
        #: Probes for the near-duplicate index (:class:`crawl.content.neardup_index.NearProbe`,
        #: encoded, each with the page's :class:`crawl.content.neardup_judge.NearQuery`) made
        #: by :meth:`process`; the caller takes them.
        self.near_probes: list[str] = []
        self._sent: list[FoundUrl] = []
        self._sent_cash: list[float] = []

    def process(self, result: FetchResult) -> list[str]:
        """Handle one outcome; returns the loop lines it produces."""
        self._hints, self._lastmods = {}, {}
        status = self._status
        robots = is_prerequisite(result.hops)
        probe = is_not_found_probe(result.hops)
        page: ParsedLinks | None = None
        soft_404 = False
        if robots:
            found = self._robots_sitemaps(result)
        elif probe:
            found = []
        else:
            found, page = self._outlinks(result)
            if result.not_found and page is not None and is_soft_404(result, page):
                # The host's not-found page again: its links are the site's navigation or
                # lead deeper into paths that answer the same.
                soft_404 = True
                status.count(PROCESS_LINKS_SOFT_404.name, len(found))
                found = []
            if (self._path_ascending and result.http_status > 0
                    and not is_sitemap_hops(result.hops)):
                parents = parent_directories(result.url)
                status.count("links.inferred", len(parents))
                hops = result.hops + INFERRED
                found += [(parent, hops, result.url) for parent in parents]
        digest = ""
        fingerprint = None
        if ((self._near_duplicates or self._change_features) and page is not None
                and page.document is not None):
            fingerprint = fingerprint_of(page.document)
        near_query = False
        copy_of_another = False
        if result.http_status > 0:
            metadata = (
                metadata_fields(result, found, page,
                                fingerprint.value if fingerprint is not None else None)
                if self._metadata_records else None
            )
            captures = self._captures
            key = payload_key(result, self._dedup_min_bytes) if captures is not None else ""
            earlier = None
            if captures is not None and key.startswith("sha1:"):
                earlier = captures.get(key)
            known = key if key.startswith("sha1:") else None  # hashed once per page
            profile = REVISIT_PROFILE
            last_capture = _last_capture(result)
            if last_capture is not None:
                earlier, profile = last_capture, NOT_MODIFIED_PROFILE
            digest = self._warc.write(result, metadata, revisit_of=earlier, payload_digest=known,
                                      profile=profile)
            # At once: a process killed between the two loses this line (README, Failures).
            self._log.log(result, payload_digest=digest,
                          reason=SOFT_404_REASON if soft_404 else None)
            if last_capture is not None:
                status.count(PROCESS_WARC_NOT_MODIFIED.name)
            elif earlier is not None:
                status.count(PROCESS_WARC_REVISITS.name)
                copy_of_another = earlier.target_uri != result.url
            elif captures is not None and key.startswith("sha1:") and self._warc.last_capture:
                captures.put(key, self._warc.last_capture)
            # An exact duplicate is a revisit already; the others meet the near-duplicate index,
            # but for pages too short to be judged.
            near_query = (self._near_duplicates and fingerprint is not None and earlier is None
                          and not soft_404
                          and fingerprint.features >= self._near_min_exact_features)
            status.count("warc.pairs")
            status.count(PROCESS_BYTES.name, len(result.body))
        else:
            if result.body:
                digest = sha1_digest(result.body)
            self._log.log(result, payload_digest=digest)
        if robots:
            status.count(f"robots.{result.status.value}")
            return self._route(found, None, "", 0.0)
        if probe:
            status.count(PROCESS_NOT_FOUND_PROBES.member(
                "soft-404" if result.not_found else _probe_answer(result)))
            return []
        status.count(PROCESS_PAGES.member(result.status.value))
        if result.status is not Status.ROBOTS_DENIED:
            status.count(PROCESS_FOUND_BY.member(way_found(result.hops)))
        # A continuous crawl's two rates: first fetches (discovery) and refetches (refresh).
        status.count(PROCESS_FETCHES_REFRESH.name if is_refetch(result.recrawl)
                     else PROCESS_FETCHES_DISCOVERY.name)
        # A page that is a byte-for-byte copy of another URL's, or whose text repeats a few
        # words, says so in its outcome: the crawl DB's budgets count it as no good page
        # (crawl/crawldb/budgets.py).
        reason = result.reason
        if not reason and soft_404:
            reason = SOFT_404_REASON
            status.count(PROCESS_PAGES_SOFT_404.name)
        elif not reason and copy_of_another:
            reason = DUPLICATE_REASON
        elif not reason and fingerprint is not None and fingerprint.repetitive:
            reason = REPETITIVE_REASON
            status.count("pages.repetitive")
        done: DoneEvent = (
            result.url, result.status.value, result.http_status, reason, result.started_ms)
        revisit = None
        if self._recrawl:
            simhash = None
            if (self._change_features and fingerprint is not None
                    and fingerprint.features >= self._change_features):
                simhash = fingerprint.value
            revisit = _revisit(result, digest, simhash).encode()
        self._level.add(result.cash)
        # The page passes its cash on to what it leads to: the outcome takes it out of its
        # record (cash that came while it was being fetched stays for its next visit).
        spent = result.cash if found and result.cash > 0 else 0.0
        if spent:
            done = (*done, revisit, spent)
        elif revisit is not None:
            done = (*done, revisit)
        lines = self._route(found, done, result.url, result.cash)
        if not near_query or fingerprint is None or self._warc.last_capture is None:
            return lines
        capture = self._warc.last_capture
        query = NearQuery(
            result.url, url_vnode(result.url, self._vnodes), fingerprint.value,
            fingerprint.features, capture.record_id, capture.warc_date, self._sent,
            self._sent_cash,
        ).encode()
        self.near_probes += page_probes(
            self._near_index, fingerprint.value, fingerprint.features < self._near_min_features,
            result.started_ms, capture.record_id, capture.warc_date, result.url, query)
        status.count(PROCESS_NEARDUP_QUERIES.name)
        return lines

    def _route(self, found: list[FoundUrl], done: DoneEvent | None, own_url: str,
               cash: float) -> list[str]:
        """Loop lines for ``found`` (after the recent-URL cache and the policy) grouped by
        vnode, each URL with its share of the page's ``cash`` (of 1 with ``priority.flow``
        shares), with ``done`` (the page's own outcome) in the line of its own vnode; and the
        cash held for URLs found lately."""
        status = self._status
        status.count(PROCESS_LINKS_FOUND.name, len(found))
        share = link_cash(1.0 if self._shares else cash, len(found))
        # A URL a sitemap gives a lastmod for goes to the crawl DB even when found lately: the
        # date may announce new content of a known URL.
        lastmods = self._lastmods
        recent = self._recent
        fresh = []
        for item in found:
            if recent.add(item[0]) or item[0] in lastmods:
                fresh.append(item)
            else:
                recent.hold(item, share)
        if len(fresh) < len(found):
            status.count(PROCESS_LINKS_RECENT.name, len(found) - len(fresh))
        found, amounts = fresh, [share] * len(fresh)
        if self._policy is not None and found:
            found, amounts = self._admitted(found, amounts)
        self._sent, self._sent_cash = found, amounts
        held = recent.release(self._clock())
        if held:
            status.count(PROCESS_LINKS_HELD_CASH.name, len(held))
            extra = [item for item, _ in held]
            extra_cash = [float(f"{amount:.{CASH_DIGITS}g}") for _, amount in held]
            if self._policy is not None:
                extra, extra_cash = self._admitted(extra, extra_cash)
            found, amounts = found + extra, amounts + extra_cash
        groups: dict[int, tuple[list[FoundUrl], list[float]]] = {}
        for item, amount in zip(found, amounts, strict=True):
            group = groups.setdefault(url_vnode(item[0], self._vnodes), ([], []))
            group[0].append(item)
            group[1].append(amount)
        own_vnode = -1
        out = _other_domains(own_url, self._sent) if own_url else []
        if done is not None or out:
            own_vnode = url_vnode(own_url, self._vnodes)
            groups.setdefault(own_vnode, ([], []))
        if not groups:
            return []
        hints = self._hints
        level = self._level.value
        lines = [
            encode_line(
                vnode,
                found=group,
                cash=group_cash,
                done=[done] if vnode == own_vnode and done is not None else (),
                line_id=self._next_line_id(),
                hint=[(url, hints[url]) for url, _, _ in group if url in hints] if hints
                else (),
                lastmod=[(url, lastmods[url]) for url, _, _ in group if url in lastmods]
                if lastmods else (),
                out=out if vnode == own_vnode else (),
                level=level,
            )
            for vnode, (group, group_cash) in groups.items()
        ]
        status.count("lines.out", len(lines))
        return lines

    def _admitted(self, found: list[FoundUrl], amounts: list[float]
                  ) -> tuple[list[FoundUrl], list[float]]:
        """The URLs the policy lets into the crawl with their cash; the others are counted by
        reason (their cash leaves the flow), and logged as the policy says."""
        policy = self._policy
        check = policy.check
        admitted, kept = [], []
        for item, amount in zip(found, amounts, strict=True):
            reason = check(*item)
            if reason is None:
                admitted.append(item)
                kept.append(amount)
            else:
                self._status.count(PROCESS_LINKS_REJECTED.member(reason))
                if policy.logs(reason):
                    self._log.log_refusal(*item, reason)
        return admitted, kept

    def _robots_sitemaps(self, result: FetchResult) -> list[FoundUrl]:
        """The sitemaps a robots.txt that answered 2xx names (hop ``S``, via the robots.txt)."""
        config = self._sitemaps
        if config is None or not 200 <= result.http_status < 300:
            return []
        urls, dropped = sitemaps_in_robots(result.body, result.url, config.max_per_robots)
        if dropped:
            self._status.count(PROCESS_LINKS_REJECTED.member("sitemap:over-limit"), dropped)
        found = []
        for url in urls:
            try:
                found.append((self._normalizer.normalize(url), SITEMAP, result.url))
            except UrlError as error:
                self._status.count(PROCESS_LINKS_REJECTED.member(error.reason))
        self._status.count("sitemaps.named", len(found))
        return found

    def _sitemap_links(self, result: FetchResult, config: SitemapsSection) -> list[FoundUrl]:
        """What a sitemap document found: child sitemaps of an index (one level deeper, up to
        ``max_nesting``), listed URLs of its own host (or of the robots.txt naming it)."""
        status = self._status
        document = parse_sitemap(
            result.body, config, truncated=result.truncated == "length",
            content_type=result.content_type,
        )
        status.count(f"sitemaps.{document.kind or 'unread'}")
        if document.error:
            status.count(f"sitemaps.error.{document.error}")
        for reason, count in document.rejected.items():
            status.count(PROCESS_LINKS_REJECTED.member(reason), count)
        found: list[FoundUrl] = []
        level = sitemap_level(result.hops)
        if document.sitemaps:
            if level >= config.max_nesting:
                status.count(PROCESS_LINKS_REJECTED.member("sitemap:too-deep"),
                             len(document.sitemaps))
            else:
                found += self._resolved(result.url, document.sitemaps, result.hops + SITEMAP, None)
        if document.urls:
            hosts = {host_of(result.url)}
            if result.hops == SITEMAP:  # named by a robots.txt (its via): that host too
                hosts.add(host_of(result.via))
            found += self._resolved(result.url, document.urls, result.hops + SITEMAP_LISTED, hosts)
            if self._recrawl:
                self._hints, self._lastmods = _sitemap_schedule(
                    self._normalizer, result.url, document.urls, result.started_ms // 1000
                )
        return found

    def _resolved(
        self, base: str, entries: list[SitemapEntry], hops: str, hosts: set[str] | None
    ) -> list[FoundUrl]:
        found = []
        for entry in entries:
            try:
                url = self._normalizer.resolve(base, entry.url)
            except UrlError as error:
                self._status.count(PROCESS_LINKS_REJECTED.member(error.reason))
                continue
            if hosts is not None and host_of(url) not in hosts:
                self._status.count(PROCESS_LINKS_REJECTED.member("sitemap:cross-host"))
                continue
            found.append((url, hops, base))
        return found

    def _next_line_id(self) -> str:
        self._lines += 1
        return f"{self._producer_id}.{self._lines}"

    def _outlinks(self, result: FetchResult) -> tuple[list[FoundUrl], ParsedLinks | None]:
        """What a page outcome leads to: a redirect's target, a sitemap's entries or a page's
        links (each with its own hop); and for a page, what its parse found."""
        if result.status is Status.REDIRECT:
            location = result.header("Location") or ""
            try:
                target = self._normalizer.resolve(result.url, location)
            except UrlError as error:
                self._status.count(PROCESS_LINKS_REJECTED.member(error.reason))
                return [], None
            if target == result.url:
                self._status.count(PROCESS_LINKS_REJECTED.member("redirect:self"))
                return [], None
            return [(target, result.hops + REDIRECT, result.url)], None
        if result.status is not Status.FETCHED or result.reason == NOT_MODIFIED:
            return [], None
        if self._sitemaps is not None and is_sitemap_hops(result.hops):
            return self._sitemap_links(result, self._sitemaps), None
        status = self._status
        parsed = self._links.extract(result)
        for reason, count in parsed.rejected.items():
            status.count(PROCESS_LINKS_REJECTED.member(reason), count)
        if parsed.noindex:
            status.count("directives.noindex")
        if parsed.nofollow:
            status.count("directives.nofollow")
        url = result.url
        hops = result.hops
        return [(link, hops + hop, url) for link, hop in parsed.links if link != url], parsed


class CaptureStore(Protocol):
    """Where each payload was first archived, by payload digest (the process stage's keyed
    state; a dict in tests)."""

    def get(self, digest: str) -> Capture | None: ...

    def put(self, digest: str, capture: Capture) -> None: ...


def payload_key(result: FetchResult, min_bytes: int) -> str:
    """The process stage's key of a fetch outcome: the payload digest of a complete response
    of at least ``min_bytes`` (its duplicates meet in one subtask, which remembers the first
    capture), else ``url:`` and the URL (nothing to deduplicate)."""
    if result.http_status > 0 and not result.truncated and len(result.body) >= max(1, min_bytes):
        return sha1_digest(result.body)
    return "url:" + result.url


def metadata_fields(
    result: FetchResult, found: list[FoundUrl], page: ParsedLinks | None = None,
    simhash: int | None = None,
) -> list[tuple[str, str]]:
    """The fields of a response's WARC ``metadata`` record, as Heritrix writes them: how the
    URL was reached, how long the fetch took, and every URL it led to with its hop (before the
    URL policy: what the page links to, not what the crawl took; links its robots directives
    dropped are not listed). From the page's parse, when there was one: ``robots`` with the
    ``noindex`` / ``nofollow`` directives it gave our crawler (the page is archived all the
    same: the archive records what was served), and its ``canonical`` URL; the ``simhash`` of
    its main text when there is one (:mod:`crawl.content.neardup`); the server's address
    (``ip``)."""
    fields = []
    if result.via:
        fields.append(("via", result.via))
    if result.hops:
        fields.append(("hopsFromSeed", result.hops))
    fields.append(("fetchTimeMs", str(result.duration_ms)))
    if result.ip_address:
        fields.append(("ip", result.ip_address))
    if simhash is not None:
        fields.append(("simhash", f"{simhash:016x}"))
    if page is not None:
        directives = [name for name, given in (("noindex", page.noindex),
                                               ("nofollow", page.nofollow)) if given]
        if directives:
            fields.append(("robots", ",".join(directives)))
        if page.canonical:
            fields.append(("canonical", page.canonical))
    fields += [("outlink", f"{url} {hops[-1:] or '-'}") for url, hops, _ in found]
    return fields


def _sitemap_schedule(
    normalizer: UrlNormalizer, base: str, entries: list[SitemapEntry], now_s: int
) -> tuple[dict[str, int], dict[str, int]]:
    """What a sitemap's entries tell the recrawl schedule: interval hints (seconds), from an
    entry's ``changefreq``, else the time since its ``lastmod`` (for a page that changes at a
    steady rate, the time since its last change is on average the time between two changes;
    the schedule's bounds apply); and each ``lastmod`` (seconds since the epoch, not in the
    future), which makes a known URL due when it is newer than the URL's last fetch."""
    hints, lastmods = {}, {}
    for entry in entries:
        seconds = CHANGEFREQ_SECONDS.get(entry.changefreq or "", 0)
        lastmod = parse_lastmod(entry.lastmod, now_s)
        if not seconds and lastmod:
            seconds = max(1, now_s - lastmod)
        if seconds or lastmod:
            try:
                url = normalizer.resolve(base, entry.url)
            except UrlError:
                continue
            if seconds:
                hints[url] = seconds
            if lastmod:
                lastmods[url] = lastmod
    return hints, lastmods


def _last_capture(result: FetchResult) -> Capture | None:
    """What the revisit record of a 304 refers to: the URL's last capture (by URI and date),
    None for any other answer (or a 304 without a known capture, archived as it came)."""
    if result.reason != NOT_MODIFIED or result.recrawl is None:
        return None
    try:
        state = RecrawlState.decode(result.recrawl)
    except (ValueError, TypeError):
        return None
    if not state.captured_s:
        return None
    return Capture(result.url, iso_timestamp_ms(state.captured_s * 1000), "")


def _revisit(result: FetchResult, digest: str, simhash: int | None = None) -> Revisit:
    """What a page's done event tells the recrawl schedule (:mod:`crawl.crawldb.recrawl`): for a 2xx
    the ``simhash`` of its main text when given, else its payload ``digest``."""
    try:
        state = RecrawlState.decode(result.recrawl) if result.recrawl is not None else None
    except (ValueError, TypeError):
        state = None
    observation = None
    if result.status is Status.FETCHED or result.status is Status.REDIRECT:
        etag, modified = result.header("ETag"), result.header("Last-Modified")
        if result.reason == NOT_MODIFIED:
            observation = Observation(etag=etag, last_modified=modified, not_modified=True)
        elif result.status is Status.REDIRECT:
            # A redirect changes when its target does.
            location = (result.header("Location") or "").encode("utf-8", "replace")
            observation = Observation(digest64(sha1_digest(location)))
        elif simhash is not None:
            observation = Observation(simhash, etag, modified, simhash=True)
        else:
            observation = Observation(digest64(digest), etag, modified)
    return Revisit(state, observation)


def _probe_answer(result: FetchResult) -> str:
    """What a not-found probe that showed no soft 404 got: its status class, or ``error``."""
    return f"{result.http_status // 100}xx" if result.http_status else "error"


def _other_domains(url: str, found: list[FoundUrl]) -> list[tuple[str, str]]:
    """(``url``'s registered domain, another) for each other domain ``found`` leads to."""
    own = registered_domain(host_of(url))
    return [(own, domain) for domain in sorted(
        {registered_domain(host_of(link)) for link, _, _ in found} - {own})]

