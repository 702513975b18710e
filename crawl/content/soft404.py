"""Soft 404s: pages a host answers with 200 for paths it does not have.

Some sites answer every path, even one they never had, with 200 and a page of their own: a
"page not found" text in the site's layout, the home page, a search. To a crawler such a page
is a page like any other: it is archived as content, its links are followed (a not-found
page's relative links lead to ever deeper paths that answer again), and its shape seems to
prove good. The test is the one of Bar-Yossef, Broder, Kumar and Tomkins ("Sic transit gloria
telae", WWW 2004): ask the host for a path nobody links to
(:func:`crawl.frontier.scheduler.probe_url`: random-looking, the same for a host every time)
and compare its answer with the pages.

The fetch stage asks after a host's first page (robots.txt must allow the path; asked again
after each new robots.txt fetch). A 2xx HTML answer becomes the host's
:class:`NotFoundPrint`, which travels with each later page of the host
(:attr:`crawl.model.FetchResult.not_found`); the process stage takes the page's own print and
:meth:`NotFoundPrint.matches` says whether it is the not-found page again: the same title
(once the page's own path is taken out of both titles and texts, as a not-found page often
names it) and the same links (at least :data:`SAME_LINKS` of them in common, Jaccard) or the
same main text (at most :data:`TEXT_DISTANCE` bits of simhash apart). A site's pages have
titles of their own; a not-found page varies at most in a sentence that names the path or
suggests something.

A host's root path and seeds are never judged: a site that answers unknown paths with its home
page would otherwise lose its home page.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
import zlib

from crawl.content.links import LinkExtractor, ParsedLinks
from crawl.content.neardup import fingerprint_text
from crawl.content.text import main_text
from crawl.model import FetchResult
from crawl.state_cache import StateCache
from crawl.status import SOFT_404_REASON

__all__ = [
    "SAME_LINKS",
    "SOFT_404_REASON",
    "TEXT_DISTANCE",
    "NotFoundAnswers",
    "NotFoundPrint",
    "is_soft_404",
    "not_found_print",
]

#: Links in common (Jaccard of the two pages' link sets) from which two pages share their links.
SAME_LINKS = 0.8
#: Main texts at most this many bits of simhash apart are the same text...
TEXT_DISTANCE = 3
#: ...when each has at least this many distinct words (fewer: their simhashes say little).
_MIN_TEXT_FEATURES = 4
#: Links kept in a print: a not-found page with more is compared by its first ones.
_MAX_LINKS = 200

_SPACES = re.compile(r"\s+")


@dataclasses.dataclass(frozen=True)
class NotFoundPrint:
    """What a page is compared by: its title without its own path, its links (as CRC-32 of
    the URL) and its main text's simhash."""

    title: str
    links: frozenset[int]
    text_print: int
    text_features: int

    @classmethod
    def of(cls, url: str, parsed: ParsedLinks) -> NotFoundPrint | None:
        """The print of a page at ``url`` parsed into ``parsed``; None without a document."""
        document = parsed.document
        if document is None:
            return None
        own = _own_names(url)
        text = fingerprint_text(_without(main_text(document).lower(), own))
        links = frozenset(zlib.crc32(link.encode()) for link, _ in parsed.links[:_MAX_LINKS])
        title = document.findtext(".//title") or document.findtext(".//h1") or ""
        return cls(_without(title.lower(), own), links, text.value, text.features)

    def matches(self, page: NotFoundPrint) -> bool:
        """Whether ``page`` is this not-found page again (see the module docstring)."""
        if page.title != self.title:
            return False
        union = len(self.links | page.links)
        if not union or len(self.links & page.links) >= SAME_LINKS * union:
            return True
        return (
            min(self.text_features, page.text_features) >= _MIN_TEXT_FEATURES
            and (self.text_print ^ page.text_print).bit_count() <= TEXT_DISTANCE
        )

    def encode(self) -> str:
        """One line of text (as kept in the fetch stage's state and sent with each page)."""
        links = ",".join(f"{link:x}" for link in sorted(self.links))
        return f"{self.text_print:x} {self.text_features} {links or '-'} {self.title}"

    @classmethod
    def decode(cls, text: str) -> NotFoundPrint:
        """The print :meth:`encode` wrote; raises ValueError on anything else."""
        text_print, features, links, title = text.split(" ", 3)
        link_set = frozenset() if links == "-" else frozenset(
            int(link, 16) for link in links.split(","))
        return cls(title, link_set, int(text_print, 16), int(features))


def is_soft_404(result: FetchResult, parsed: ParsedLinks) -> bool:
    """Whether the page of ``result``, parsed into ``parsed``, is its host's not-found page
    (:attr:`crawl.model.FetchResult.not_found`); never a seed nor a host's root path."""
    if not result.not_found or not result.hops:
        return False
    if urllib.parse.urlsplit(result.url).path in ("", "/"):
        return False
    page = NotFoundPrint.of(result.url, parsed)
    if page is None:
        return False
    try:
        probe = NotFoundPrint.decode(result.not_found)
    except ValueError:
        return False
    return probe.matches(page)


def not_found_print(result: FetchResult, links: LinkExtractor) -> str:
    """The encoded print of a probe's answer ("" when it is no HTML page)."""
    page = NotFoundPrint.of(result.url, links.extract(result))
    return page.encode() if page is not None else ""


class NotFoundAnswers(StateCache[str | None]):
    """The fetch stage's memory of its hosts' not-found answers (see
    :attr:`crawl.frontier.scheduler.HostState.not_found`) in front of the keyed state that
    keeps them: the last ``capacity`` hosts in memory, the state read on a miss and written
    only on a change."""


def _own_names(url: str) -> list[str]:
    """How a page may name what was asked for: its path, and its last segment when that looks
    like a file name (a plain word, such as "page", may be the page's own)."""
    path = urllib.parse.unquote(urllib.parse.urlsplit(url).path).lower()
    names = [path] if len(path) > 1 else []
    last = path.rstrip("/").rsplit("/", 1)[-1]
    if last and not last.isalpha():
        names.append(last)
    return names


def _without(text: str, names: list[str]) -> str:
    """``text`` without ``names``, spaces collapsed."""
    for name in names:
        text = text.replace(name, " ")
    return _SPACES.sub(" ", text).strip()
