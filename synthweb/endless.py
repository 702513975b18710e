"""The endless spaces of the multi-domain web: the grammar of their URLs and the links they write.

Each lives on an otherwise real site (:mod:`synthweb.sites` places them) and is entered from
its real pages; :mod:`synthweb.domains` builds the pages around these pure functions.

- **Calendar** (``/calendar/{yyyy}/{mm}/`` and ``/calendar/{yyyy}/{mm}/{dd}/``, years 1 to
  9999): a month links the months before and after and each of its days; a day links the days
  around it, its month and the site's events on that date.
- **Session ids** (``?visit={16 hex digits}``, a name no normaliser strips): on the session
  site every page seen with an id writes every link into its own site with a fresh id, drawn
  from its own URL; its real pages link the account page ``/account/?visit=...`` with one.
- **Repeating path** (``/support/faq/support/faq/...``): the FAQ's pages link "back" with the
  relative reference ``support/faq/``, which resolves one level deeper each time, and the
  server answers every depth with the FAQ again.
- **Parameter combinations** (``/shop/?colour=red&sort=price&page=2``): a shop listing links
  every filter added, changed or removed, each key at most once but in the order clicked.
- **Farm pages**: every path of a farm host is a page linking densely to its own host, its
  cluster and a little to the other clusters.
"""

from __future__ import annotations

import datetime
import hashlib
import random
import re

from synthweb.sites import FarmHost

__all__ = [
    "FACETS",
    "REPEAT_HREF",
    "SESSION_PARAM",
    "calendar_date",
    "calendar_links",
    "day_path",
    "facet_links",
    "facet_query",
    "farm_links",
    "farm_path",
    "farm_title",
    "month_path",
    "parse_facets",
    "repeat_depth",
    "session_id",
    "split_session",
    "with_session",
]

#: The query parameter of session ids.
SESSION_PARAM = "visit"
#: The filters of a shop listing and their values; ``page`` is a filter too.
FACETS = (
    ("sort", ("price", "newest", "rating", "name")),
    ("colour", ("red", "blue", "green", "black", "white", "grey")),
    ("size", ("xs", "s", "m", "l", "xl")),
    ("brand", ("acme", "north", "vela", "orbit", "kite", "lumen")),
    ("price", ("0-20", "20-50", "50-100", "100-")),
    ("page", ("2", "3", "4", "5")),
)
_FACET_VALUES = dict(FACETS)
#: The relative reference the FAQ's pages write for "back to the FAQ".
REPEAT_HREF = "support/faq/"
_MONTH_RE = re.compile(r"/calendar/([0-9]{4})/([0-9]{2})/(?:([0-9]{2})/)?")
_SESSION_RE = re.compile(rf"(.*?)[?&]{SESSION_PARAM}=([0-9a-f]{{16}})")
_FARM_WORDS = (
    "cheap", "best", "free", "top", "deals", "online", "discount", "buy", "review", "casino",
    "loans", "pills", "replica", "bonus", "win", "fast", "prize", "offer", "sale", "guide",
)  # fmt: skip


# -- the calendar ----------------------------------------------------------------------------


def month_path(day: datetime.date) -> str:
    """The month view that shows ``day``."""
    return f"/calendar/{day.year:04d}/{day.month:02d}/"


def day_path(day: datetime.date) -> str:
    """The day view of ``day``."""
    return f"/calendar/{day.year:04d}/{day.month:02d}/{day.day:02d}/"


def calendar_date(path: str) -> tuple[datetime.date, bool] | None:
    """(first day of the month or the day, whether it is a day view) of a calendar path."""
    match = _MONTH_RE.fullmatch(path)
    if not match:
        return None
    try:
        day = datetime.date(int(match.group(1)), int(match.group(2)), int(match.group(3) or 1))
    except ValueError:
        return None
    return day, match.group(3) is not None


def calendar_links(day: datetime.date, is_day: bool) -> list[tuple[str, str, str]]:
    """(href, path, text) of the calendar links of a month or day view (events apart)."""
    if is_day:
        links = [(day_path(d), day_path(d), d.isoformat()) for d in _around(day, 1)]
        return links + [(month_path(day), month_path(day), day.strftime("%B %Y"))]
    first = day.replace(day=1)
    links = []
    if first > datetime.date.min:
        before = (first - datetime.timedelta(days=1)).replace(day=1)
        links.append((month_path(before), month_path(before), "previous month"))
    after = _next_month(first)
    if after is not None:
        links.append((month_path(after), month_path(after), "next month"))
    shown = first
    while shown.month == first.month:
        links.append((day_path(shown), day_path(shown), str(shown.day)))
        if shown == datetime.date.max:
            break
        shown += datetime.timedelta(days=1)
    return links


def _around(day: datetime.date, step: int) -> list[datetime.date]:
    found = []
    for offset in (-step, step):
        try:
            found.append(day + datetime.timedelta(days=offset))
        except OverflowError:
            continue
    return found


def _next_month(first: datetime.date) -> datetime.date | None:
    if (first.year, first.month) == (9999, 12):
        return None
    return first.replace(year=first.year + (first.month == 12), month=first.month % 12 + 1)


# -- session ids -----------------------------------------------------------------------------


def session_id(text: str) -> str:
    """A fresh-looking session id drawn from ``text`` (16 hexadecimal digits)."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def split_session(path: str) -> tuple[str, str] | None:
    """(path without the id, the id) of a path whose query ends with a session id, or None."""
    match = _SESSION_RE.fullmatch(path)
    return (match.group(1), match.group(2)) if match else None


def with_session(path: str, value: str) -> str:
    """``path`` (with or without a query) with the session id ``value`` appended."""
    return f"{path}{'&' if '?' in path else '?'}{SESSION_PARAM}={value}"


# -- the repeating path ----------------------------------------------------------------------


def repeat_depth(path: str) -> tuple[int, str] | None:
    """(how many times ``support/faq/`` repeats after ``/support/faq/``, the rest) of a path
    under the FAQ, or None for another path. Depth 0 is the real FAQ."""
    head = "/support/faq/"
    if not path.startswith(head):
        return None
    rest = path[len(head) :]
    depth = 0
    while rest.startswith(REPEAT_HREF):
        rest = rest[len(REPEAT_HREF) :]
        depth += 1
    return depth, rest


# -- parameter combinations ------------------------------------------------------------------


def parse_facets(query: str) -> list[tuple[str, str]] | None:
    """The filters of a listing's query, in order, or None if it is no valid combination."""
    params = []
    for part in query.split("&"):
        key, _, value = part.partition("=")
        if value not in _FACET_VALUES.get(key, ()) or any(k == key for k, _ in params):
            return None
        params.append((key, value))
    return params or None


def facet_query(params: list[tuple[str, str]]) -> str:
    """The query of a filter combination (empty for none)."""
    return "&".join(f"{key}={value}" for key, value in params)


def facet_links(params: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(query, text) of every listing one click away: a filter added, changed or removed."""
    links = []
    present = dict(params)
    for key, values in FACETS:
        if key not in present:
            links += [(facet_query([*params, (key, v)]), f"{key}: {v}") for v in values]
            continue
        position = next(i for i, (k, _) in enumerate(params) if k == key)
        for value in values:
            if value != present[key]:
                changed = params[:position] + [(key, value)] + params[position + 1 :]
                links.append((facet_query(changed), f"{key}: {value}"))
        links.append((facet_query(params[:position] + params[position + 1 :]), f"any {key}"))
    return links


# -- farm pages ------------------------------------------------------------------------------


def farm_path(n: int) -> str:
    """The path of farm page ``n`` of a host (``/`` for 0)."""
    if n == 0:
        return "/"
    first = _FARM_WORDS[n % len(_FARM_WORDS)]
    second = _FARM_WORDS[(n // len(_FARM_WORDS)) % len(_FARM_WORDS)]
    return f"/{first}-{second}-{n}.html"


def farm_title(path: str) -> str:
    """A keyword title for a farm page."""
    words = re.findall(r"[a-z]+", path) or ["best", "deals"]
    return " ".join(words[:3]).title() + " - Top Offers Online"


def farm_links(rng: random.Random, farm: FarmHost, farms: list[FarmHost],
               homes: list[str], count: int) -> list[tuple[str, str, str]]:
    """(href, url, text) of the links of a farm page: to its own host about half the time,
    to its cluster's other hosts, a little to the other clusters and to real home pages."""
    cluster = [f for f in farms if f.cluster == farm.cluster and f.name != farm.name]
    others = [f for f in farms if f.cluster != farm.cluster]
    links = []
    for _ in range(count):
        roll = rng.random()
        path = farm_path(0 if rng.random() < 0.1 else rng.randint(1, 10**7))
        text = farm_title(path)
        if roll < 0.04 and homes:
            home = rng.choice(homes)
            links.append((home, home, "partner"))
        elif roll < 0.5 or not (cluster or others):
            links.append((path, f"http://{farm.name}{path}", text))
        else:
            pool = others if (roll > 0.9 and others) or not cluster else cluster
            target = f"http://{rng.choice(pool).name}{path}"
            links.append((target, target, text))
    return links
