"""When a fetched URL is due again: the recrawl schedule of a continuous crawl.

Every fetch outcome gets a next fetch time (``recrawl.enabled``). What a URL's schedule
needs is its :class:`RecrawlState` (interval, content digest, validators, change counts), kept
in its crawl DB record (the recrawl fields of :mod:`drum.record`). The state travels with the
URL: the crawl DB hands it to the frontier with a due URL, the fetcher turns its validators into
a conditional GET (``If-None-Match`` from the stored ``ETag``, ``If-Modified-Since`` from the
stored ``Last-Modified``), the process stage sends it back with what the fetch saw
(:class:`Observation`: the new digest and validators, or a 304), and the crawl DB computes the
new state and the next fetch time here (:meth:`RecrawlSchedule.after`) and stores both with the
outcome. So the crawl DB's updates stay blind (no read before a write): the outcome carries
absolute values.

The interval (bounded by ``min_seconds`` and ``max_seconds``, or by a matching override):

* the first fetch: ``initial_seconds`` (or the URL's hint: a sitemap's ``changefreq``, else
  the time since its sitemap ``lastmod``);
* a later observation (a 2xx or a 304) is a visit that found the page changed (its content
  digest differs, or with ``change_distance`` its main text's simhash is more than that many
  bits from the one of its last counted change; a 304 is unchanged) or not. For the first
  ``estimate_after`` visits Nutch's AdaptiveFetchSchedule applies: the interval shrinks by
  ``dec_rate`` after a change and grows by ``inc_rate`` otherwise. From then on, Cho and
  Garcia-Molina's estimator of a Poisson change rate from ``n`` visits at interval ``I`` that
  found ``X`` changes, ``rate = -ln((n - X + 0.5) / (n + 0.5)) / I`` (their bias-reduced
  estimator: finite when every visit found a change), sets the interval at which a visit
  finds a change with probability ``change_target``: ``-ln(1 - change_target) / rate``; it
  moves at most by a factor ``1 + inc_rate`` up and 4 down per visit, and the visit counts
  are halved past ``estimate_window`` visits so that the estimate follows a page whose rate
  changes;
* a failure (no usable answer) is tried again after ``retry_seconds x 2^(failures in a row -
  1)``, and the URL is retired (never due again, kept as seen) after ``retire_failures``
  failures in a row, or ``gone_failures`` in a row of 404, 410 or a host name that no longer
  resolves;
* a URL robots.txt denies is asked again after ``denied_seconds``; a rejected URL never.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime
import email.utils
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from crawl.config import RecrawlSection, parse_recrawl_overrides
from crawl.http.dates import format_http_date, parse_http_date
from drum import NEVER, RECRAWL_FIELDS
from drum.record import DIGEST_IS_SIMHASH, ETAG_LENGTH_MASK, ETAG_WEAK, pack_etag, unpack_etag

__all__ = [
    "CHANGEFREQ_SECONDS",
    "Observation",
    "RecrawlSchedule",
    "RecrawlState",
    "Revisit",
    "conditional_headers",
    "digest64",
    "is_refetch",
    "parse_etag",
    "parse_last_modified",
    "parse_lastmod",
    "states_of_records",
    "store_states",
]

#: sitemaps.org's ``changefreq`` values as interval hints (seconds).
CHANGEFREQ_SECONDS = {
    "always": 60,
    "hourly": 3_600,
    "daily": 86_400,
    "weekly": 7 * 86_400,
    "monthly": 30 * 86_400,
    "yearly": 365 * 86_400,
    "never": 10 * 365 * 86_400,
}

_U4 = 0xFFFFFFFF
# RFC 9110 8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text.
_ETAG = re.compile(r'(W/)?"([\x21\x23-\x7e]*)"')
# The parts of a W3C Datetime that Python 3.10's fromisoformat does not read (3.11 does): a
# "Z" time zone, a fraction of a second of other than 3 or 6 digits, an offset without colon.
_ISO_FRACTION = re.compile(r"([T ]\d\d:\d\d:\d\d)\.(\d+)")
_ISO_ZONE = re.compile(r"([T ][\d:.]+)(?:[Zz]|([+-]\d\d)(\d\d))$")
# Reasons of a failure that says the URL is gone, not that the server failed for a while.
_GONE_HTTP = (404, 410)
_GONE_REASON_PREFIXES = ("dns:",)


def parse_etag(value: str | None) -> tuple[str, bool] | None:
    """The opaque tag and weakness of an ``ETag`` header, or None when there is none, it is
    malformed, or the crawl DB's record cannot keep its tag (longer than 32 characters and not
    mostly hex digits: :func:`drum.record.pack_etag`)."""
    if not value:
        return None
    match = _ETAG.fullmatch(value.strip())
    if match is None or pack_etag(match.group(2)) is None:
        return None
    return match.group(2), bool(match.group(1))


def parse_last_modified(value: str | None, now_s: int) -> int:
    """Seconds since the epoch of a ``Last-Modified`` header, 0 when absent or invalid (RFC
    9110: an invalid date is ignored). Read leniently
    (:func:`crawl.http.dates.parse_http_date`), unlike ``Retry-After``: a numeric zone or a
    lower-case name still dates the page, and a wrong date costs no more than a conditional
    request. ``now_s`` places a two-digit year."""
    if not value:
        return 0
    moment = parse_http_date(value, now_s * 1000, lenient=True)
    if moment is None:
        return 0
    seconds = moment // 1000
    return seconds if 0 < seconds <= _U4 else 0


def parse_lastmod(value: str | None, now_s: int) -> int:
    """Seconds since the epoch of a sitemap's ``<lastmod>`` (W3C Datetime: ``2026-11-25``,
    ``2026-11-25T08:30:00+01:00``...; an RSS ``pubDate`` or Atom ``updated`` too), 0 when
    absent, invalid or later than ``now_s`` (a date in the future says nothing true). A date
    without a time zone is taken as UTC."""
    if not value:
        return 0
    text = value.strip()
    try:
        if len(text) == 4 and text.isdigit():  # a year alone
            text += "-01-01"
        elif len(text) == 7 and text[4] == "-":  # a year and month
            text += "-01"
        parsed = datetime.datetime.fromisoformat(_iso_for_fromisoformat(text))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return 0
        if parsed is None:
            return 0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    try:
        seconds = int(parsed.timestamp())
    except (OverflowError, OSError, ValueError):
        return 0
    return seconds if 0 < seconds <= min(now_s, _U4) else 0


def _iso_for_fromisoformat(text: str) -> str:
    """``text`` with a "Z" time zone as ``+00:00``, an offset as ``+hh:mm`` and a fraction of
    a second as 6 digits, forms every supported Python's ``fromisoformat`` reads."""
    text = _ISO_FRACTION.sub(lambda m: f"{m[1]}.{m[2][:6].ljust(6, '0')}", text, count=1)
    return _ISO_ZONE.sub(lambda m: f"{m[1]}{m[2] or '+00'}:{m[3] or '00'}", text, count=1)


def digest64(sha1_digest: str) -> int:
    """64 bits of a ``sha1:<base32>`` payload digest (as the WARC writer writes it), for the
    record's ``digest`` field; 0 for anything else."""

    if not sha1_digest.startswith("sha1:"):
        return 0
    try:
        raw = base64.b32decode(sha1_digest[5:])
    except (ValueError, binascii.Error):
        return 0
    return int.from_bytes(raw[:8], "little") or 1


@dataclasses.dataclass(frozen=True, slots=True)
class RecrawlState:
    """What a URL's schedule knows of it (see the module docstring); all zero before its first
    fetch (but for ``interval_s``, which may hold a hint)."""

    #: Seconds since the epoch of the outcome this state is from (0: never fetched).
    recrawl_s: int = 0
    interval_s: int = 0
    #: 64 bits of the last capture's content digest (0: none).
    digest: int = 0
    #: The last capture's Last-Modified (seconds; 0: none).
    modified_s: int = 0
    #: When the content was last seen (a 2xx or a 304) and last archived in full (a 2xx).
    observed_s: int = 0
    captured_s: int = 0
    visits: int = 0
    changes: int = 0
    failures_in_row: int = 0
    #: The stored ETag's opaque tag ("" for none) and whether it is weak.
    etag: str = ""
    weak: bool = False
    #: ``digest`` is a simhash of the main text, not a digest of the payload.
    simhash: bool = False

    @property
    def fetched(self) -> bool:
        return self.recrawl_s > 0

    def etag_header(self) -> str:
        """The stored ETag as a header value ("" for none)."""
        if not self.etag and not self.weak:
            return ""
        return f'{"W/" if self.weak else ""}"{self.etag}"'

    def conditional_headers(self) -> list[tuple[str, str]]:
        """The validators of a conditional GET (none before a first capture)."""
        headers = []
        if not self.captured_s:
            return headers
        etag = self.etag_header()
        if etag:
            headers.append(("If-None-Match", etag))
        if self.modified_s:
            headers.append(("If-Modified-Since", format_http_date(self.modified_s)))
        return headers

    def encode(self) -> list[Any]:
        """A compact JSON-able form (for the frontier's queue and the loop)."""
        return [
            self.recrawl_s, self.interval_s, self.digest, self.modified_s, self.observed_s,
            self.captured_s, self.visits, self.changes, self.failures_in_row,
            self.etag_header(), int(self.simhash),
        ]

    @classmethod
    def decode(cls, items: Sequence[Any]) -> RecrawlState:
        """Inverse of :meth:`encode`; raises ValueError for anything else."""
        if not isinstance(items, list | tuple) or len(items) != 11:
            raise ValueError(f"not a recrawl state: {items!r}")
        numbers = [int(item) for item in items[:9]]
        if any(n < 0 for n in numbers) or numbers[2] >= 1 << 64:
            raise ValueError(f"not a recrawl state: {items!r}")
        etag = parse_etag(str(items[9])) if items[9] else None
        return cls(
            *[min(n, _U4) for n in numbers[:2]], numbers[2],
            *[min(n, _U4) for n in numbers[3:6]], *[min(n, 255) for n in numbers[6:9]],
            etag=etag[0] if etag else "", weak=bool(etag and etag[1]), simhash=bool(items[10]),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class Observation:
    """What a fetch saw of a URL's content: its 64-bit digest (0: none), its validators, and
    whether the server said 304 Not Modified."""

    digest: int = 0
    etag: str | None = None
    last_modified: str | None = None
    not_modified: bool = False
    simhash: bool = False

    def encode(self) -> list[Any]:
        return [self.digest, self.etag or "", self.last_modified or "", int(self.not_modified),
                int(self.simhash)]

    @classmethod
    def decode(cls, items: Sequence[Any]) -> Observation:
        if not isinstance(items, list | tuple) or len(items) != 5:
            raise ValueError(f"not an observation: {items!r}")
        digest = int(items[0])
        if not 0 <= digest < 1 << 64:
            raise ValueError(f"not an observation: {items!r}")
        return cls(digest, str(items[1]) or None, str(items[2]) or None, bool(items[3]),
                   bool(items[4]))


@dataclasses.dataclass(frozen=True, slots=True)
class Revisit:
    """What a done event carries for the schedule: the state the URL was fetched with (None on
    its first fetch) and what the fetch saw (None when nothing was received)."""

    state: RecrawlState | None
    observation: Observation | None

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.state is not None:
            out["s"] = self.state.encode()
        if self.observation is not None:
            out["o"] = self.observation.encode()
        return out

    @classmethod
    def decode(cls, value: Any) -> Revisit:
        if not isinstance(value, dict):
            raise ValueError(f"not a revisit: {value!r}")
        state = value.get("s")
        observation = value.get("o")
        return cls(
            RecrawlState.decode(state) if state is not None else None,
            Observation.decode(observation) if observation is not None else None,
        )




class RecrawlSchedule:
    """The next fetch time and recrawl state of a URL after each outcome."""

    def __init__(self, section: RecrawlSection) -> None:
        self.section = section
        self._overrides = parse_recrawl_overrides(section.overrides)
        self._drop_bound = 4.0

    def bounds(self, url: str) -> tuple[float, float, float]:
        """(min, max, initial) seconds for ``url``: its first matching override's, else the
        section's."""
        section = self.section
        low, high, initial = section.min_seconds, section.max_seconds, section.initial_seconds
        if self._overrides:
            host = url.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0].lower()
            for override in self._overrides:
                if override.matches(url, host):
                    low = override.min_seconds if override.min_seconds is not None else low
                    high = override.max_seconds if override.max_seconds is not None else high
                    if override.initial_seconds is not None:
                        initial = override.initial_seconds
                    break
        high = max(low, high)
        return low, high, min(max(initial, low), high)

    def after(
        self,
        url: str,
        status: str,
        http_status: int,
        reason: str,
        at_ms: int,
        revisit: Revisit | None,
    ) -> tuple[RecrawlState, int, str]:
        """The URL's new state, its next fetch time (ms; :data:`drum.NEVER` when it is not to
        be fetched again) and what happened (``first``, ``changed``, ``unchanged``,
        ``not-modified``, ``retry``, ``retired``, ``denied``, ``never``)."""
        state = revisit.state if revisit is not None and revisit.state else RecrawlState()
        observation = revisit.observation if revisit is not None else None
        now_s = max(1, min(at_ms // 1000, _U4))
        low, high, initial = self.bounds(url)
        section = self.section
        if status == "REJECTED":
            return dataclasses.replace(state, recrawl_s=now_s), NEVER, "never"
        if status == "ROBOTS_DENIED":
            return (
                dataclasses.replace(state, recrawl_s=now_s),
                at_ms + int(section.denied_seconds * 1000),
                "denied",
            )
        if status in ("FETCHED", "REDIRECT") and observation is not None:
            return self._observed(state, observation, now_s, at_ms, low, high, initial)
        failures = min(state.failures_in_row + 1, 255)
        failed = dataclasses.replace(state, recrawl_s=now_s, failures_in_row=failures)
        gone = http_status in _GONE_HTTP or reason.startswith(_GONE_REASON_PREFIXES)
        if failures >= section.retire_failures or (gone and failures >= section.gone_failures):
            return failed, NEVER, "retired"
        wait = min(section.retry_seconds * 2 ** (failures - 1), high)
        return failed, at_ms + int(wait * 1000), "retry"

    def _observed(
        self,
        state: RecrawlState,
        seen: Observation,
        now_s: int,
        at_ms: int,
        low: float,
        high: float,
        initial: float,
    ) -> tuple[RecrawlState, int, str]:
        section = self.section
        etag = parse_etag(seen.etag)
        modified = parse_last_modified(seen.last_modified, now_s)
        if seen.not_modified:
            # A 304 may update the validators (RFC 9110 15.4.5); the content is as captured.
            changed, digest, simhash, captured = False, state.digest, state.simhash, (
                state.captured_s)
            if etag is None and (state.etag or state.weak):
                etag = (state.etag, state.weak)
            modified = modified or state.modified_s
            what = "not-modified"
        else:
            changed = self._changed(state, seen)
            digest, simhash, captured = seen.digest, seen.simhash, now_s
            if not changed and seen.simhash and state.simhash and state.digest:
                # Compared with the last counted change: small changes add up to one.
                digest = state.digest
            what = "changed" if changed else "unchanged"
        if not state.observed_s:
            interval: float = state.interval_s or initial
            visits = changes = 0
            what = "first"
        else:
            visits = state.visits + 1
            changes = state.changes + int(changed)
            if visits > section.estimate_window:
                visits, changes = (visits + 1) // 2, (changes + 1) // 2
            interval = self._adapt(state.interval_s or initial, visits, changes, changed)
        interval = int(round(min(max(interval, low), high)))
        new = RecrawlState(
            recrawl_s=now_s,
            interval_s=max(1, min(interval, _U4)),
            digest=digest,
            modified_s=modified,
            observed_s=now_s,
            captured_s=captured,
            visits=min(visits, 255),
            changes=min(changes, 255),
            failures_in_row=0,
            etag=etag[0] if etag else "",
            weak=bool(etag and etag[1]),
            simhash=simhash,
        )
        return new, at_ms + new.interval_s * 1000, what

    def _changed(self, state: RecrawlState, seen: Observation) -> bool:
        """Whether a 2xx found the page changed since ``state`` (never at a first visit): its
        main text's simhash more than ``change_distance`` bits away when both are simhashes,
        else its digest differs (or one is a simhash and the other not)."""
        if not state.digest:
            return False
        if seen.simhash and state.simhash:
            return (seen.digest ^ state.digest).bit_count() > self.section.change_distance
        return seen.digest != state.digest or seen.simhash != state.simhash

    def _adapt(self, interval: float, visits: int, changes: int, changed: bool) -> float:
        section = self.section
        if visits < section.estimate_after:
            return interval * ((1 - section.dec_rate) if changed else (1 + section.inc_rate))
        rate = -math.log((visits - changes + 0.5) / (visits + 0.5)) / interval
        grown = interval * (1 + section.inc_rate)
        if rate <= 0:
            return grown
        target = -math.log(1 - section.change_target) / rate
        return min(max(target, interval / self._drop_bound), grown)


def conditional_headers(encoded: list | None) -> list[tuple[str, str]]:
    """The validators of a revisit whose encoded state the frontier holds (none for a first
    fetch, or for a state that does not decode: a plain GET is always correct)."""
    if encoded is None:
        return []
    try:
        return RecrawlState.decode(encoded).conditional_headers()
    except (ValueError, TypeError):
        return []


def is_refetch(encoded: list | None) -> bool:
    """Whether an encoded state the frontier holds is that of a URL fetched before (not a
    first fetch, which may carry an interval hint)."""
    return bool(encoded) and isinstance(encoded[0], int) and encoded[0] > 0


def states_of_records(values: np.ndarray) -> list[RecrawlState | None]:
    """The recrawl state of each DRUM record (None for a URL never fetched and without an
    interval hint). O(n)."""
    if not len(values):
        return []
    columns = {name: values[name].tolist() for name in RECRAWL_FIELDS}
    states: list[RecrawlState | None] = []
    for i in range(len(values)):
        if not columns["recrawl_s"][i] and not columns["interval_s"][i]:
            states.append(None)
            continue
        info = columns["etag_info"][i]
        states.append(RecrawlState(
            columns["recrawl_s"][i], columns["interval_s"][i], columns["digest"][i],
            columns["modified_s"][i], columns["observed_s"][i], columns["captured_s"][i],
            columns["visits"][i], columns["changes"][i], columns["failures_in_row"][i],
            unpack_etag(columns["etag"][i], info & ETAG_LENGTH_MASK), bool(info & ETAG_WEAK),
            bool(info & DIGEST_IS_SIMHASH),
        ))
    return states


def store_states(values: np.ndarray, states: Sequence[RecrawlState]) -> None:
    """Write ``states`` into the recrawl fields of ``values`` (records of as many URLs)."""
    n = len(states)
    if not n:
        return
    for name, getter in (
        ("recrawl_s", lambda s: s.recrawl_s), ("interval_s", lambda s: s.interval_s),
        ("digest", lambda s: s.digest), ("modified_s", lambda s: s.modified_s),
        ("observed_s", lambda s: s.observed_s), ("captured_s", lambda s: s.captured_s),
        ("visits", lambda s: s.visits), ("changes", lambda s: s.changes),
        ("failures_in_row", lambda s: s.failures_in_row),
    ):
        values[name] = np.fromiter(map(getter, states), dtype=values.dtype[name], count=n)
    tags = [pack_etag(s.etag) or (b"", 0) for s in states]
    values["etag"] = [tag for tag, _ in tags]
    values["etag_info"] = [
        code | (ETAG_WEAK if s.weak else 0) | (DIGEST_IS_SIMHASH if s.simhash else 0)
        for (_, code), s in zip(tags, states, strict=True)
    ]
