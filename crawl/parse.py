"""Link extraction from fetched HTML pages (Beautiful Soup over lxml).

Only ``<a href>`` and ``<area href>`` links are followed for now, resolved against
``<base href>`` when the page has one and normalised with :mod:`crawl.urls`. Broken markup and
binary junk never raise out of here: at worst a page yields no links.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections import Counter

from bs4 import BeautifulSoup, SoupStrainer, XMLParsedAsHTMLWarning

from crawl.model import FetchResult
from crawl.status import Status
from crawl.urls import UrlError, resolve

__all__ = ["HTML_TYPES", "ParsedLinks", "extract_links"]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

_LINK_TAGS = SoupStrainer(["a", "area", "base"])

warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)


@dataclasses.dataclass(slots=True)
class ParsedLinks:
    """The canonical outlinks of a page (in document order, without repeats) and what was
    rejected, counted by reason."""

    urls: list[str] = dataclasses.field(default_factory=list)
    rejected: Counter[str] = dataclasses.field(default_factory=Counter)


def _charset(content_type_header: str | None) -> str | None:
    if not content_type_header:
        return None
    for part in content_type_header.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'")
    return None


def extract_links(result: FetchResult) -> ParsedLinks:
    """Outlinks of a fetched HTML page; empty for anything that is not a 2xx HTML page."""
    parsed = ParsedLinks()
    if result.status is not Status.FETCHED or result.content_type not in HTML_TYPES:
        return parsed
    if not result.body:
        return parsed
    try:
        soup = BeautifulSoup(
            result.body,
            "lxml",
            parse_only=_LINK_TAGS,
            from_encoding=_charset(result.header("Content-Type")),
        )
    except Exception:  # noqa: BLE001 - a page the parser cannot read has no links
        parsed.rejected["parse:failed"] += 1
        return parsed
    base = result.url
    base_tag = soup.find("base", href=True)
    if base_tag is not None:
        try:
            base = resolve(result.url, str(base_tag["href"]))
        except UrlError:
            parsed.rejected["url:bad-base"] += 1
    seen: set[str] = set()
    for tag in soup.find_all(["a", "area"], href=True):
        href = tag["href"]
        if not isinstance(href, str):
            href = " ".join(href)
        try:
            url = resolve(base, href)
        except UrlError as error:
            parsed.rejected[error.reason] += 1
            continue
        if url not in seen:
            seen.add(url)
            parsed.urls.append(url)
    return parsed
