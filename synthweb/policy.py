"""The URL-policy profile of the synthetic web: spellings, traps, a link farm, popular pages.

Everything here is off unless :class:`~synthweb.config.WebConfig` turns it on
(:meth:`~synthweb.config.WebConfig.with_url_policy_profile` turns on all of it); with it off the
web, its ground truth and its audit are exactly as without this module. What each part serves:

- **Spellings** (``url_variant_share``): a share of the links to pages of the normal web are
  written in another spelling of the same URL (:data:`VARIANT_FORMS`: host in mixed case,
  ``:80``, percent-encoded unreserved characters such as ``/%70/3``, lower-case escapes such as
  ``/caf%c3%a9/20``, dot segments ``/x/../p/3`` and ``/./p/3``, empty path, fragments, session
  ids in the query ``?jsessionid=`` ``?PHPSESSID=`` ``?sid=`` ``?ASPSESSIONID=`` mixed with real
  parameters, and as a path parameter ``/p/3;jsessionid=...``). Each host also gets two pages that
  need it: ``/caf%C3%A9/{n}`` and ``/catalog?item={n}&lang=en``, linked from its home page. The
  server answers every spelling with the page of its identity
  (:func:`synthweb.urls.page_identity`). A link's ``url`` is that identity.
- **Traps** (``traps``): the host ``traps.synth.test`` (robots.txt allows everything) serves
  unbounded spaces of distinct URLs: a calendar (``/calendar/2026/12`` links to the months before
  and after and to its days ``/calendar?date=2026-12-01&view=day``, which link to the days around
  them and to week views ``&view=week``), combinations of parameters (``/search?a=1&b=2`` links to
  each page with one parameter changed and to the one with one more parameter) and a path that
  grows (``/loop/sub/`` links ``sub/``, so ``/loop/sub/sub/`` ...). Its entry points
  (:data:`TRAP_ENTRY_PATHS`) are linked from the home page of one normal host (``h0`` when it is
  the showcase). :func:`is_trap` tells trap URLs.
- **Link farm** (``farm_hosts``): hosts ``s{i}.farm-spam.test`` (another registered domain than
  the web's ``synth.test``; robots.txt allows everything), ``farm_pages_per_host`` pages each
  (``/`` and ``/f/{n}``), every page linking ``farm_links_per_page`` times to pages of its own
  host and of the other farm hosts. The normal web links to it twice only (``s0``'s home page
  from the home page that links the traps, ``s1``'s from one page of another host).
  :func:`is_farm` tells farm URLs.
- **Popular pages** (``popular_pages``): pages of the normal web that a page on many other hosts
  links to: the ``j``-th of ``n`` from about ``(n - j) / n`` of the other hosts, so the in-degree
  is skewed and graded (:meth:`~synthweb.graph.SyntheticWeb.in_links`).

This module holds the parts that need no model: names, predicates, trap pages, spellings.
"""

from __future__ import annotations

import datetime
import random
import re
import string

from synthweb.urls import DOMAIN, page_identity, split_url

__all__ = [
    "FARM_DOMAIN",
    "TRAP_AREAS",
    "TRAP_ENTRY_PATHS",
    "TRAP_HOST",
    "VARIANT_FORMS",
    "farm_host_index",
    "farm_host_name",
    "is_farm",
    "is_trap",
    "trap_area",
]

#: The host of the trap areas (on the web's own registered domain).
TRAP_HOST = f"traps.{DOMAIN}"
#: The link farm's registered domain: its hosts are ``s{i}.farm-spam.test``.
FARM_DOMAIN = "farm-spam.test"
#: The trap areas, as :func:`trap_area` names them.
TRAP_AREAS = ("calendar", "search", "loop")
#: Where the normal web links into the traps: one entry per area.
TRAP_ENTRY_PATHS = ("/calendar/2026/12", "/search?a=1", "/loop/sub/")

#: How the web may spell a link to a page (see :func:`variant_href`).
VARIANT_FORMS = (
    "mixed-case-host",
    "default-port",
    "percent",
    "percent-lower",
    "dot-dot",
    "dot",
    "empty-path",
    "fragment",
    "session-query",
    "session-path",
    "combined",
)

# Spellings of the session-id parameter names (SESSION_ID_PARAMS, in several cases).
_SESSION_NAMES = (
    "jsessionid", "JSESSIONID", "PHPSESSID", "phpsessid", "sid", "SID", "ASPSESSIONID",
)  # fmt: skip
_FARM_RE = re.compile(r"s(0|[1-9][0-9]*)\.farm-spam\.test")
_MONTH_RE = re.compile(r"/calendar/([0-9]{4})/([0-9]{2})")
_DAY_RE = re.compile(r"/calendar\?date=([0-9]{4})-([0-9]{2})-([0-9]{2})&view=(day|week)")
_LOOP_RE = re.compile(r"/loop/(?:sub/)*")
_SEARCH_PARAM_RE = re.compile(r"([a-z])=([1-9][0-9]{0,8})")


def farm_host_name(index: int) -> str:
    """The name of farm host number ``index``: ``s{index}.farm-spam.test``."""
    return f"s{index}.{FARM_DOMAIN}"


def farm_host_index(host: str) -> int | None:
    """The index of a farm host name in canonical form, or None."""
    match = _FARM_RE.fullmatch(host)
    return int(match.group(1)) if match else None


def _host_and_path(url: str) -> tuple[str, str] | None:
    identity = page_identity(url)
    return None if identity is None else split_url(identity)


def is_trap(url: str) -> bool:
    """Whether ``url`` (any spelling) is on the trap host; its robots.txt is not a trap URL."""
    parts = _host_and_path(url)
    return parts is not None and parts[0] == TRAP_HOST and parts[1] != "/robots.txt"


def is_farm(url: str) -> bool:
    """Whether ``url`` (any spelling) is in the farm's domain; robots.txt files are not."""
    parts = _host_and_path(url)
    if parts is None or parts[1] == "/robots.txt":
        return False
    host = parts[0]
    return host == FARM_DOMAIN or host.endswith("." + FARM_DOMAIN)


def trap_area(url: str) -> str | None:
    """``"calendar"``, ``"search"`` or ``"loop"`` for a trap URL in that area, ``"other"`` for
    another trap URL (the trap host's home page, a 404), None for a URL that is no trap."""
    if not is_trap(url):
        return None
    parts = _host_and_path(url)
    assert parts is not None
    path = parts[1]
    for area in TRAP_AREAS:
        if path == f"/{area}" or path.startswith((f"/{area}/", f"/{area}?")):
            return area
    return "other"


# -- trap pages ----------------------------------------------------------------------------


def trap_links(path: str) -> list[tuple[str, str]] | None:
    """The links (href as written, identity) of trap page ``path``, or None if it is a 404."""
    base = f"http://{TRAP_HOST}"
    if path == "/":
        return [(entry, base + entry) for entry in TRAP_ENTRY_PATHS]
    match = _MONTH_RE.fullmatch(path)
    if match:
        return _month_links(base, int(match.group(1)), int(match.group(2)))
    match = _DAY_RE.fullmatch(path)
    if match:
        try:
            day = datetime.date(*(int(match.group(n)) for n in (1, 2, 3)))
        except ValueError:
            return None
        return _day_links(base, day, match.group(4))
    if path == "/search" or path.startswith("/search?"):
        return _search_links(base, path.partition("?")[2])
    if _LOOP_RE.fullmatch(path):
        links = [("sub/", f"{base}{path}sub/")]
        if path != "/loop/":
            links.append(("../", base + path[: path[:-1].rfind("/") + 1]))
        return links
    return None


def _month_path(year: int, month: int) -> str:
    return f"/calendar/{year:04d}/{month:02d}"


def _day_path(day: datetime.date, view: str) -> str:
    return f"/calendar?date={day.isoformat()}&view={view}"


def _month_links(base: str, year: int, month: int) -> list[tuple[str, str]] | None:
    if not (1 <= year <= 9999 and 1 <= month <= 12):
        return None
    links = []
    if (year, month) > (1, 1):
        before = _month_path(year - (month == 1), 12 if month == 1 else month - 1)
        links.append((before, base + before))
    if (year, month) < (9999, 12):
        after = _month_path(year + (month == 12), 1 if month == 12 else month + 1)
        links.append((after, base + after))
    day: datetime.date | None = datetime.date(year, month, 1)
    while day is not None and day.month == month:
        path = _day_path(day, "day")
        links.append((path, base + path))
        day = _shift(day, 1)
    return links


def _shift(day: datetime.date, days: int) -> datetime.date | None:
    try:
        return day + datetime.timedelta(days=days)
    except OverflowError:
        return None


def _day_links(base: str, day: datetime.date, view: str) -> list[tuple[str, str]]:
    step = 1 if view == "day" else 7
    links = []
    for other in (_shift(day, -step), _shift(day, step)):
        if other is not None:
            query = _day_path(other, view).partition("?")[2]
            links.append((f"?{query}", f"{base}/calendar?{query}"))
    if view == "day":
        week = _day_path(day, "week")
        links.append((week, base + week))
    else:
        for offset in range(7):
            shown = _shift(day, offset)
            if shown is not None:
                path = _day_path(shown, "day")
                links.append((path, base + path))
    month = _month_path(day.year, day.month)
    links.append((month, base + month))
    return links


def _search_links(base: str, query: str) -> list[tuple[str, str]] | None:
    params: list[tuple[str, int]] = []
    for position, param in enumerate(query.split("&") if query else ()):
        match = _SEARCH_PARAM_RE.fullmatch(param)
        if not match or match.group(1) != string.ascii_lowercase[position]:
            return None
        params.append((match.group(1), int(match.group(2))))
    variants = []
    for position, (key, value) in enumerate(params):
        if value < 999_999_999:
            variants.append(params[:position] + [(key, value + 1)] + params[position + 1 :])
    if len(params) < len(string.ascii_lowercase):
        variants.append(params + [(string.ascii_lowercase[len(params)], 1)])
    links = []
    for variant in variants:
        written = "?" + "&".join(f"{key}={value}" for key, value in variant)
        links.append((written, f"{base}/search{written}"))
    return links


# -- the link farm -------------------------------------------------------------------------


def farm_path(number: int) -> str:
    """The path of farm page ``number`` of a host: ``/`` for 0, else ``/f/{number}``."""
    return "/" if number == 0 else f"/f/{number}"


def farm_number(path: str, pages: int) -> int | None:
    """The number of the farm page at ``path`` on a host of ``pages`` pages, or None (404)."""
    if path == "/":
        return 0
    if path.startswith("/f/") and path[3:].isdigit() and path[3] != "0":
        number = int(path[3:])
        return number if number < pages else None
    return None


def farm_links(
    rng: random.Random, index: int, number: int, hosts: int, pages: int, count: int
) -> list[tuple[str, str]]:
    """The links of farm page ``number`` of host ``index``: dense, within the farm only."""
    own = farm_host_name(index)
    links = []
    if number == 0:
        links += [(farm_path(n), f"http://{own}{farm_path(n)}") for n in range(1, min(9, pages))]
    for _ in range(count):
        target = rng.randrange(pages)
        if hosts > 1 and rng.random() < 0.5:
            other = rng.randrange(hosts - 1)
            url = f"http://{farm_host_name(other + (other >= index))}{farm_path(target)}"
            links.append((url, url))
        else:
            links.append((farm_path(target), f"http://{own}{farm_path(target)}"))
    return links


# -- spellings -----------------------------------------------------------------------------


def session_id(rng: random.Random) -> str:
    """A session-id value: 16 to 32 hexadecimal digits in one case."""
    value = rng.randbytes(rng.randint(8, 16)).hex()
    return value.upper() if rng.random() < 0.5 else value


def variant_href(form: str, target: str, rng: random.Random, *, same_host: bool) -> str:
    """``target`` (a canonical URL) written in spelling ``form`` (one of :data:`VARIANT_FORMS`).

    Forms that do not apply to the target (``empty-path`` to a path other than ``/``, percent
    forms on ``/``) fall back to another form. With ``same_host``, path forms are sometimes
    written relative to the host's root. :func:`synthweb.urls.page_identity` of the result is
    ``target``.
    """
    host, full_path = split_url(target)
    path, mark, query = full_path.partition("?")
    if form == "empty-path" and path != "/":
        form = "mixed-case-host"
    if form in ("percent", "percent-lower") and path == "/":
        form = "empty-path"
    origin = f"http://{host}"
    if same_host and form not in ("mixed-case-host", "default-port", "empty-path", "combined"):
        if rng.random() < 0.5:
            origin = ""
    tail = f"?{query}" if mark else ""
    if form == "mixed-case-host":
        return f"http://{_mixed_case(host, rng)}{path}{tail}"
    if form == "default-port":
        scheme = rng.choice(("http", "HTTP", "Http"))
        return f"{scheme}://{host}:80{path}{tail}"
    if form == "percent":
        return f"{origin}/%{ord(path[1]):02X}{path[2:]}{tail}"
    if form == "percent-lower":
        return f"{origin}{_lower_escapes(path)}{tail}"
    if form == "dot-dot":
        return f"{origin}/{rng.choice(('x', 'a', 'tmp', 'p'))}/..{path}{tail}"
    if form == "dot":
        return f"{origin}/.{path}{tail}"
    if form == "empty-path":
        spelled = rng.choice((host, host.upper()))
        return f"http://{spelled}{tail}" if tail or rng.random() < 0.5 else f"http://{spelled}/."
    if form == "fragment":
        return f"{origin}{path}{tail}#{rng.choice(('top', 'section-3', '', 'p=2'))}"
    if form == "session-query":
        return f"{origin}{path}?{_with_session(query, rng)}"
    if form == "session-path":
        return f"{origin}{path};{rng.choice(('jsessionid', 'JSESSIONID'))}={session_id(rng)}{tail}"
    if form == "combined":
        encoded = f"/%{ord(path[1]):02x}{path[2:]}" if path != "/" else "/"
        return (
            f"HTTP://{_mixed_case(host, rng)}:80/.{encoded};jsessionid={session_id(rng)}"
            f"?{_with_session(query, rng)}#top"
        )
    raise ValueError(f"unknown variant form {form!r}")


def _mixed_case(host: str, rng: random.Random) -> str:
    spelled = "".join(c.upper() if rng.random() < 0.5 else c for c in host)
    return spelled if spelled != host else host.upper()


def _lower_escapes(path: str) -> str:
    """Existing escapes in lower case; else one character whose escape has a hex letter."""
    if "%" in path:
        return re.sub(r"%[0-9A-Fa-f]{2}", lambda m: m.group(0).lower(), path)
    for i, char in enumerate(path):
        code = f"{ord(char):02x}"
        if char != "/" and not code.isdigit():
            return f"{path[:i]}%{code}{path[i + 1 :]}"
    return f"/%{ord(path[1]):02x}{path[2:]}"


def _with_session(query: str, rng: random.Random) -> str:
    params = query.split("&") if query else []
    params.insert(rng.randint(0, len(params)), f"{rng.choice(_SESSION_NAMES)}={session_id(rng)}")
    return "&".join(params)
