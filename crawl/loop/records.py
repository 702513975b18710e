"""The records that go round the loop: discovered URLs and fetch outcomes, grouped by vnode.

One loop line carries everything one page produced for one virtual node::

    <vnode> TAB {"i": id, "found": [[url, hops, via], ...], "cash": [amount, ...],
                 "done": [[url, status, http, reason, ms(, revisit(, spent))], ...],
                 "rescore": [[url, hops, via, weight(, cash)], ...],
                 "near": [[url, original url, distance], ...],
                 "hint": [[url, seconds], ...],
                 "lastmod": [[url, seconds since the epoch], ...],
                 "out": [[registered domain, another it links to], ...],
                 "level": typical cash of the pages fetched now}

- ``i``: the producer's id and sequence number, so a line read twice can be told from two alike;
- ``cash``: what each ``found`` URL's discovery brings (:mod:`crawl.urls.priority`), in order;
  older lines have none;
- ``done``: a fetch outcome; ``revisit`` is the recrawl state the URL was fetched with and what
  the fetch saw (:class:`crawl.crawldb.recrawl.Revisit`, encoded; null without recrawl),
  ``spent`` the cash the fetch passed on;
- ``rescore`` and ``near``: from the near-duplicate stage (:mod:`crawl.content.neardup_judge`): a
  link of a near-duplicate gets ``weight`` (negative) times its ``cash`` once more, and a
  near-duplicate is marked in the crawl DB;
- ``hint`` and ``lastmod``: a sitemap's ``changefreq`` and ``lastmod`` for found URLs;
- ``out``: the other registered domains a page links to (the domain budgets); ``level``: the
  producer's :class:`crawl.urls.priority.CashLevel`, against which new URLs are deferred.

A URL's vnode (:func:`url_vnode`) is a hash of its host's registered domain; the prefix lets
the reader key a line without parsing its JSON. Seed files in the loop directory hold lines of
this format. README.md ("How it works", Loop) and ARCHITECTURE.md ("The job", the loop)
describe the loop itself.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from crawl.urls.normalize import DEFAULT_NORMALIZER, UrlError, UrlNormalizer, host_of, vnode_of
from crawl.urls.scope import registered_domain

if TYPE_CHECKING:
    from crawl.urls.scope import UrlPolicy

__all__ = [
    "DoneEvent",
    "FoundUrl",
    "IntervalHint",
    "LoopRecord",
    "LoopRecordError",
    "NearMark",
    "Rescore",
    "decode_line",
    "encode_line",
    "group_by_vnode",
    "parse_payload",
    "parse_record",
    "url_vnode",
    "VNODE_KEY",
    "write_seed_file",
]

#: A discovered URL: (url, hop path from its seed, the URL that led here).
FoundUrl = tuple[str, str, str]
#: A fetch outcome: (url, status name, HTTP status, reason, time in ms), in a continuous
#: crawl the encoded :class:`crawl.crawldb.recrawl.Revisit` as a sixth item (None without),
#: and the cash the fetch passed on as a seventh.
DoneEvent = (tuple[str, str, int, str, int] | tuple[str, str, int, str, int, dict | None]
             | tuple[str, str, int, str, int, dict | None, float])
#: A change of a found link's worth: (url, hops, via, weight, the cash the link brought; None
#: in lines written before cash existed): ``weight`` x that cash is added once more.
Rescore = tuple[str, str, str, float, float | None]
#: A page found a near-duplicate: (url, URL of the earlier capture, Hamming distance).
NearMark = tuple[str, str, int]
#: A found URL's recrawl interval hint: (url, seconds).
IntervalHint = tuple[str, int]
#: A found URL's last change as a sitemap announces it: (url, seconds since the epoch).
Announcement = tuple[str, int]


class LoopRecord(NamedTuple):
    """The parts of a loop line's payload."""

    found: list[FoundUrl]
    done: list[DoneEvent]
    rescore: list[Rescore]
    near: list[NearMark]
    hint: list[IntervalHint]
    lastmod: list[Announcement]
    #: The cash each found URL brings, in the order of ``found``; None: the line has none.
    cash: list[float] | None = None
    #: (a registered domain, another its page links to) pairs.
    out: list[tuple[str, str]] = []
    #: The typical cash of the pages fetched now, as the line's producer sees it (None: none).
    level: float | None = None


class LoopRecordError(ValueError):
    """A loop line that is not of the format above (counted and skipped, never fatal)."""


def encode_line(
    vnode: int,
    found: Iterable[FoundUrl] = (),
    done: Iterable[DoneEvent] = (),
    line_id: str = "",
    rescore: Iterable[Rescore] = (),
    near: Iterable[NearMark] = (),
    hint: Iterable[IntervalHint] = (),
    lastmod: Iterable[Announcement] = (),
    cash: Iterable[float] | None = None,
    out: Iterable[tuple[str, str]] = (),
    level: float | None = None,
) -> str:
    """One loop line; empty lists (and an empty id) are left out. ``cash``, when given, has an
    amount for each of ``found``."""
    payload: dict[str, Any] = {"i": line_id} if line_id else {}
    found = list(found)
    amounts = list(cash) if cash is not None else None
    if amounts is not None and len(amounts) != len(found):
        raise ValueError(f"{len(amounts)} amounts of cash for {len(found)} found URLs")
    rescore = [item[:4] if len(item) > 4 and item[4] is None else item for item in rescore]
    for name, items in (("found", found), ("cash", amounts), ("done", done),
                        ("rescore", rescore), ("near", near), ("hint", hint),
                        ("lastmod", lastmod), ("out", out)):
        items = list(items) if items is not None else []
        if items:
            payload[name] = items
    if level is not None:
        payload["level"] = level
    return f"{vnode}\t{json.dumps(payload, separators=(',', ':'), ensure_ascii=False)}"


def decode_line(line: str) -> tuple[int, str]:
    """Split a loop line into its vnode and its JSON payload (not parsed here)."""
    vnode_text, tab, payload = line.partition("\t")
    # isascii: str.isdigit() also accepts digits int() refuses ("²") or reads oddly ("١٢").
    digits = vnode_text.isascii() and vnode_text.isdigit()
    if not tab or not digits or not payload.startswith("{"):
        raise LoopRecordError(f"not a loop line: {line[:120]!r}")
    return int(vnode_text), payload


def parse_payload(payload: str) -> tuple[list[FoundUrl], list[DoneEvent]]:
    """The found URLs and done events of a line's payload."""
    record = parse_record(payload)
    return record.found, record.done


def parse_record(payload: str) -> LoopRecord:
    """Every part of a line's payload."""
    try:
        data = json.loads(payload)
        found = [
            (str(u), str(h), str(v)) for u, h, v in _items(data.get("found", []), 3)
        ]
        cash = None
        if "cash" in data:
            cash = [_finite(amount) for amount in data["cash"]]
            if len(cash) != len(found):
                raise ValueError(f"{len(cash)} amounts of cash for {len(found)} found URLs")
        done = [_done_event(item) for item in _items(data.get("done", []), 5, 7)]
        rescore = [
            (str(item[0]), str(item[1]), str(item[2]), _finite(item[3]),
             _finite(item[4]) if len(item) > 4 else None)
            for item in _items(data.get("rescore", []), 4, 5)
        ]
        near = [(str(u), str(o), int(d)) for u, o, d in _items(data.get("near", []), 3)]
        hint = [(str(u), max(0, int(s))) for u, s in _items(data.get("hint", []), 2)]
        lastmod = [(str(u), max(0, int(s))) for u, s in _items(data.get("lastmod", []), 2)]
        out = [(str(a), str(b)) for a, b in _items(data.get("out", []), 2)]
        level = _finite(data["level"]) if "level" in data else None
    except (ValueError, TypeError, AttributeError) as error:
        raise LoopRecordError(f"bad loop payload: {error}: {payload[:120]!r}") from None
    return LoopRecord(found, done, rescore, near, hint, lastmod, cash, out, level)


def _finite(value: Any) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    return number


def _done_event(item: list[Any]) -> DoneEvent:
    url, status, code, reason, at = item[:5]
    event = (str(url), str(status), int(code), str(reason), int(at))
    if len(item) == 5:
        return event
    revisit = item[5]
    if revisit is not None and not isinstance(revisit, dict):
        raise ValueError(f"a done event's revisit is not an object: {revisit!r}")
    if len(item) == 6:
        return (*event, revisit)
    return (*event, revisit, _finite(item[6]))


def _items(values: Any, arity: int, max_arity: int = 0) -> list[list[Any]]:
    longest = max(arity, max_arity)
    if not isinstance(values, list) or not all(
        isinstance(item, list) and arity <= len(item) <= longest for item in values
    ):
        raise ValueError(f"expected a list of {arity}-element lists")
    return values


#: What a URL's vnode is a hash of (recorded with a crawl: it can never change during its life).
VNODE_KEY = "registered domain"


def url_vnode(url: str, vnodes: int) -> int:
    """The vnode of a normalised URL: a hash of its host's registered domain."""
    return vnode_of(registered_domain(host_of(url)), vnodes)


def group_by_vnode(urls: Iterable[FoundUrl], vnodes: int) -> dict[int, list[FoundUrl]]:
    """Group normalised URLs by their vnode, keeping order within a group."""
    groups: dict[int, list[FoundUrl]] = {}
    for item in urls:
        groups.setdefault(url_vnode(item[0], vnodes), []).append(item)
    return groups


def write_seed_file(
    loop_dir: str | Path,
    seeds: Iterable[str],
    vnodes: int,
    policy: UrlPolicy | None = None,
    normalizer: UrlNormalizer = DEFAULT_NORMALIZER,
) -> tuple[int, list[tuple[str, str]]]:
    """Normalise ``seeds``, check them against ``policy`` and drop them into the loop as one
    file (atomically).

    Returns (number of seeds written, [(seed, reason) for each rejected seed]).
    """
    accepted: list[FoundUrl] = []
    rejected: list[tuple[str, str]] = []
    seen: set[str] = set()
    for raw in seeds:
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        try:
            url = normalizer.normalize(text)
        except UrlError as error:
            rejected.append((text, error.reason))
            continue
        reason = policy.check(url) if policy is not None else None
        if reason:
            rejected.append((text, reason))
            continue
        if url not in seen:
            seen.add(url)
            accepted.append((url, "", ""))
    if accepted:
        directory = Path(loop_dir)
        directory.mkdir(parents=True, exist_ok=True)
        token = uuid.uuid4().hex
        name = f"seeds-{token}"
        hidden = directory / f".{name}.tmp"
        with open(hidden, "w", encoding="utf-8") as handle:
            for number, (vnode, group) in enumerate(
                sorted(group_by_vnode(accepted, vnodes).items())
            ):
                handle.write(encode_line(vnode, found=group, line_id=f"s.{token}.{number}") + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(hidden, directory / name)
    return len(accepted), rejected
