"""robots.txt policy (RFC 9309) over Protego: what a fetch of robots.txt means for a host.

A :class:`RobotsRecord` is what the crawl keeps per host (in keyed state): the HTTP status of
the last robots.txt fetch, its text when it succeeded, and until when it may be trusted.
:class:`RobotsPolicy` interprets a record for our product token:

- 2xx: the text is parsed with Protego and the group matching our token (else ``*``) applies;
  only the first ``max_bytes`` are parsed (RFC 9309 2.5 asks for at least 500 KiB), and of a
  file cut there (or cut short by a timeout) the incomplete last line is left out: it is not a
  rule the site wrote (``Disallow: /archive/2024/`` cut after ``Disallow: /`` would deny the
  whole site). Text that is not robots.txt allows everything, as RFC 9309 says of unparseable
  lines.
- 4xx but 429: no robots.txt, everything allowed.
- 5xx, 429, timeout, unreachable: everything disallowed (never treat a failure as allow). The
  record is trusted until ``unavailable_retry_seconds``; the scheduler fetches robots.txt
  again sooner, as the host's back-off allows, while the host's queued URLs wait
  (``robots.unavailable_attempts``). 429 is the server asking the crawler to slow down, which
  RFC 9309's "4xx: unavailable, allow all" would turn into a licence to crawl the whole site:
  it counts as unreachable, as Google counts it.
- 2xx whose text Protego raises on: it would allow no more than the site said only by luck,
  so it counts as unavailable too (:data:`UNPARSEABLE`, ``robots:unavailable:unparseable``):
  the policy denies everything, and the scheduler turns the record into one that is retried
  as a 5xx is (:func:`unparseable`). A URL the rules raise on is denied as well
  (``robots:internal:<exception>``).
"""

from __future__ import annotations

import dataclasses
import re

from protego import Protego

from crawl.config import RobotsSection

__all__ = [
    "UNPARSEABLE",
    "RobotsPolicy",
    "RobotsRecord",
    "record_from_fetch",
    "rfc_lines",
    "robots_url",
    "unparseable",
    "whole_lines",
]

#: The reason of a robots.txt that answered but whose text could not be parsed.
UNPARSEABLE = "unparseable"


def robots_url(host: str, scheme: str = "http") -> str:
    """The robots.txt URL of a host (``host`` may carry a non-default port)."""
    return f"{scheme}://{host}/robots.txt"


@dataclasses.dataclass(frozen=True, slots=True)
class RobotsRecord:
    """The outcome of a host's last robots.txt fetch, as kept in state.

    ``http_status`` is 0 when no response was received (then ``reason`` says why); a 2xx
    record with a reason (:data:`UNPARSEABLE`) holds a text that could not be parsed.
    """

    http_status: int
    body: str
    fetched_ms: int
    expires_ms: int
    reason: str = ""

    @property
    def available(self) -> bool:
        """False when robots.txt could not be had (5xx, 429 or no response) or could not be
        parsed: disallow all."""
        return _available(self.http_status) and not self.reason

    def expired(self, now_ms: int) -> bool:
        """Whether robots.txt must be fetched again before the next request to the host."""
        return now_ms >= self.expires_ms


def _available(http_status: int) -> bool:
    return 0 < http_status < 500 and http_status != 429


def record_from_fetch(
    http_status: int,
    body: bytes,
    reason: str,
    now_ms: int,
    config: RobotsSection,
    truncated: str = "",
) -> RobotsRecord:
    """Build the record kept for a host from a robots.txt fetch (redirects already followed).

    ``truncated`` is the fetch's mark of a body cut short (``"length"`` at ``max_bytes``,
    ``"time"``); a body longer than ``max_bytes`` is cut here too.
    """
    if 200 <= http_status < 300:
        text = whole_lines(body, config.max_bytes, bool(truncated)).decode(
            "utf-8-sig", errors="replace"
        )
        return RobotsRecord(http_status, text, now_ms, now_ms + int(config.ttl_seconds * 1000))
    if _available(http_status):
        # 3xx left after following redirects counts as unavailable-but-not-failed: RFC 9309
        # says to follow up to five redirects, then treat it as 4xx (allow all).
        return RobotsRecord(http_status, "", now_ms, now_ms + int(config.ttl_seconds * 1000))
    retry = now_ms + int(config.unavailable_retry_seconds * 1000)
    return RobotsRecord(http_status, "", now_ms, retry, reason or f"http:{http_status}")


def unparseable(record: RobotsRecord, now_ms: int, config: RobotsSection) -> RobotsRecord:
    """The record of a 2xx robots.txt whose text could not be parsed, judged at ``now_ms``:
    unavailable (disallow all) until ``unavailable_retry_seconds``, as after a 5xx; the text is
    not kept (the archive has it)."""
    retry = now_ms + int(config.unavailable_retry_seconds * 1000)
    return RobotsRecord(record.http_status, "", now_ms, retry, UNPARSEABLE)


def whole_lines(body: bytes, max_bytes: int, cut: bool = False) -> bytes:
    """The first ``max_bytes`` of ``body`` without the incomplete line a cut leaves at its end.

    ``cut`` says that ``body`` itself was cut short; a body longer than ``max_bytes`` is cut
    here. Of a cut body, what follows its last line end (CR or LF, RFC 9309 2.2) is dropped;
    a cut that falls just after a line end (between the CR and LF of a CRLF too) drops nothing,
    and a cut body without any line end keeps nothing (one unfinished line holds no group).
    """
    if len(body) > max_bytes:
        body, cut = body[:max_bytes], True
    if not cut:
        return body
    return body[: max(body.rfind(b"\n"), body.rfind(b"\r")) + 1]


#: Fields Protego understands; RFC 9309 defines the first three, the others are common
#: extensions. A line with any other field (or none) is not a rule and must not end a group.
_KNOWN_FIELDS = frozenset(
    {"user-agent", "allow", "disallow", "crawl-delay", "sitemap", "request-rate", "visit-time",
     "host"}
)


#: The product token at the start of a user-agent value (RFC 9309 2.2.1).
_TOKEN = re.compile(r"[A-Za-z_-]*")


def rfc_lines(text: str) -> str:
    """``text`` with the lines RFC 9309 ignores left out, before Protego reads it.

    A line that is no ``field: value`` pair, or whose field is unknown, is dropped: Protego
    would let it end the current group, so that the rules after it would apply to nobody
    (RFC 9309 2.2: groups are ended by the next user-agent line only; Google's
    ID_LineSyntax_Groups_OtherRules). A user-agent value is cut where its product token ends,
    at the first character other than a letter, ``_`` or ``-`` (``User-agent: Foo Bar`` and
    ``User-agent: Foo/1.0`` name ``Foo``): the site meant that bot, so obeying the group is the
    polite reading, and Google's.
    """
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            kept.append(line)
            continue
        field, colon, value = line.partition(":")
        name = field.strip().lower()
        if not colon or name not in _KNOWN_FIELDS:
            continue
        if name == "user-agent":
            value = value.split("#", 1)[0].strip()
            token = "*" if value.startswith("*") else _TOKEN.match(value).group(0)
            line = f"User-agent: {token}"
        kept.append(line)
    return "\n".join(kept)


class RobotsPolicy:
    """Answers 'may our token fetch this URL?' and 'how long must we wait?' for one host."""

    __slots__ = ("_crawl_delay", "_parser", "_record", "_token", "_unparseable")

    def __init__(self, record: RobotsRecord, token: str, max_crawl_delay_seconds: float) -> None:
        self._record = record
        self._token = token.lower()
        self._parser: Protego | None = None
        self._crawl_delay = 0.0
        self._unparseable = False
        if 200 <= record.http_status < 300 and record.body.strip():
            try:
                self._parser = Protego.parse(rfc_lines(record.body))
                delay = self._parser.crawl_delay(self._token)
            except Exception:  # noqa: BLE001 - judged below: the web never stops the job
                self._parser = None
                self._unparseable = True
                delay = None
            if delay is not None and delay > 0:
                self._crawl_delay = min(float(delay), max_crawl_delay_seconds)

    @property
    def record(self) -> RobotsRecord:
        """The record this policy interprets."""
        return self._record

    @property
    def unparseable(self) -> bool:
        """Whether the record's text could not be parsed (then everything is denied)."""
        return self._unparseable

    @property
    def crawl_delay_seconds(self) -> float:
        """Crawl-delay for our group (capped by configuration), 0 when none."""
        return self._crawl_delay

    def verdict(self, url: str) -> tuple[bool, str]:
        """(allowed, reason) for ``url``; reason is empty when allowed."""
        if not self._record.available:
            return False, f"robots:unavailable:{self._record.reason or self._record.http_status}"
        if self._unparseable:
            return False, f"robots:unavailable:{UNPARSEABLE}"
        if self._parser is None:
            return True, ""
        try:
            allowed = self._parser.can_fetch(url, self._token)
        except Exception as error:  # noqa: BLE001 - the web never stops the job
            return False, f"robots:internal:{type(error).__name__}"
        if allowed:
            return True, ""
        return False, "robots:disallow"

    def allows_path(self, path: str) -> bool:
        """Convenience for tests: is ``path`` (with query) allowed on this host?"""
        return self.verdict(f"http://robots.invalid{path}")[0]

