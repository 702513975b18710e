"""URL normalisation, link resolution and partitioning by host.

Normalisation is RFC 3986 section 6 (syntax-based) with the WHATWG URL Standard's reading of
what browsers accept, for the two schemes the crawler fetches (``http``, ``https``):

- scheme and host lower-cased; IDN hosts to punycode (UTS 46, non-transitional, as browsers:
  ``faß.de`` is ``xn--fa-hia.de``); percent-escapes in the host decoded first; trailing dots
  dropped; hosts that end in a number parsed as IPv4 the WHATWG way (``0x7f.1``, ``017700000001``
  and ``2130706433`` are all ``127.0.0.1``; an invalid one is an error); IPv6 literals
  compressed and lower-cased (RFC 5952); other hosts must be dotted LDH labels (underscores
  allowed);
- default port removed, empty path to ``/``, dot segments removed (also ``%2e``), fragment,
  empty query and empty user info dropped;
- percent-escapes upper-cased, unreserved characters decoded, anything else that may not appear
  literally encoded as UTF-8 (a lone ``%`` becomes ``%25``);
- session-id parameters removed (``jsessionid``, ``phpsessid``, ``sid`` ...: see
  :data:`DEFAULT_SESSION_PARAMS`) from the query and from the last path segment (``;jsessionid=``);
  the query keeps its order unless the normaliser sorts it;
- the WHATWG input rules: C0 controls and spaces stripped around, tabs and line breaks removed
  inside, backslashes read as slashes before the query, any number of slashes after ``http:``.

:meth:`UrlNormalizer.resolve` resolves links as browsers do for the common cases (``//host``
links, ``\\`` paths, ``http:relative`` on an http page, query-only and fragment-only links).
Anything that is not an http(s) URL raises :class:`UrlError` with a short reason.

Why our own code rather than a library: the crawler normalises every link it extracts, so the
common case (a clean absolute or relative link) must take a few microseconds at most (about one
on a cache hit). w3lib's ``canonicalize_url`` takes 8-28 us a link and url-normalize 60-85 us
(with ``urljoin``), and they get 40-50% of the canonical forms of the test table wrong:
neither resolves links the WHATWG way, rejects other schemes, removes default ports (w3lib),
drops fragments (url-normalize), parses WHATWG IPv4 forms or strips session ids
(``bench/url_normalize.py``). Libraries do the parts that are standards work: IDNA is the
``idna`` package's UTS 46, with the standard library's IDNA 2003 codec as fallback for names
IDNA 2008 refuses but browsers accept (symbols), as yarl does; IPv6 parsing is :mod:`ipaddress`.

The rules carry a version (:data:`NORMALIZATION_VERSION`) because a change of rules changes the
identity of URLs already in a crawl's state. Every URL that enters the crawl passes through
:func:`normalize` exactly once, where it is born (seed injection, link extraction), so the loop
only carries canonical URLs.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import re
import zlib
from collections.abc import Callable, Iterable
from urllib.parse import unquote

import idna

from crawl.config import UrlsSection

__all__ = [
    "DEFAULT_NORMALIZER",
    "DEFAULT_SESSION_PARAMS",
    "MAX_URL_LENGTH",
    "NORMALIZATION_VERSION",
    "UrlError",
    "UrlNormalizer",
    "host_of",
    "normalization_settings",
    "normalize",
    "parent_directories",
    "resolve",
    "vnode_of",
]

#: 1: RFC 3986 syntax normalisation. 2: WHATWG input rules (slashes after the scheme, C0
#: stripping, IPv4 number forms, host percent-decoding, UTS 46 IDNA), session ids stripped,
#: empty userinfo dropped.
NORMALIZATION_VERSION = 2

MAX_URL_LENGTH = 2048
# Longer input is rejected before any work (the result is checked against MAX_URL_LENGTH).
_MAX_INPUT_LENGTH = 4 * MAX_URL_LENGTH

_DEFAULTS = UrlsSection()
#: Query and path parameters that carry a session id (compared case-insensitively): the
#: default of ``urls.strip_params``.
DEFAULT_SESSION_PARAMS = frozenset(_DEFAULTS.strip_params)

_DEFAULT_PORTS = {"http": 80, "https": 443}
_C0_OR_SPACE = "".join(chr(code) for code in range(0x21))
_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PERCENT_RE = re.compile(r"%([0-9A-Fa-f]{2})")
# What to encode: characters not allowed literally in a path or query (RFC 3986 pchar, '/' and
# '?'), and a '%' that does not start an escape.
_TO_ENCODE_RE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]+|%(?![0-9A-Fa-f]{2})")
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# After the scheme and its slashes: authority, path (may hold backslashes), query; the
# fragment is left out.
_SPLIT_RE = re.compile(r"([^/\\?#]*)([^?#]*)(?:\?([^#]*))?")
# Fast paths: a component with nothing to decode or encode, and an authority that is already a
# lower-case DNS name whose last label cannot be a number (no port, no user info, no IPv4).
_CLEAN_COMPONENT = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*\Z")
_SIMPLE_HOST = re.compile(
    r"(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?\.)*[a-z_](?:[a-z0-9_-]*[a-z0-9_])?\Z"
)
_HOST_RE = re.compile(
    r"(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?\Z"
)
_HEX_RE = re.compile(r"[0-9a-f]*\Z")
_OCTAL_RE = re.compile(r"[0-7]+\Z")


class UrlError(ValueError):
    """A string that cannot be a crawlable URL. ``reason`` is a short machine-readable code.

    Reasons: ``url:empty``, ``url:too-long``, ``url:scheme:<scheme>`` (``url:scheme:none`` for a
    relative reference where an absolute URL is needed), ``url:no-host``, ``url:bad-host``,
    ``url:bad-idn-host``, ``url:bad-ipv4``, ``url:bad-ipv6``, ``url:bad-port``,
    ``url:unparseable`` (an unclosed ``[``, or text after ``]``), ``url:bad-base`` (resolution
    against a page URL that is not an http(s) URL).
    """

    def __init__(self, reason: str, url: str) -> None:
        super().__init__(f"{reason}: {url[:200]!r}")
        self.reason = reason
        self.url = url


def _fix_escape(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _encode(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group().encode("utf-8", "surrogatepass"))


def _normalize_percent(component: str) -> str:
    """Upper-case escapes, decode unreserved characters, encode anything not allowed."""
    if _CLEAN_COMPONENT.match(component):
        return component
    # Encode first: decoding yields unreserved characters only, so it cannot make a stray '%'
    # into an escape ('%A%41' is '%25AA', not '%AA').
    escapes = "%" in component
    component = _TO_ENCODE_RE.sub(_encode, component)
    return _PERCENT_RE.sub(_fix_escape, component) if escapes else component


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4."""
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
            continue
        if segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
            continue
        output.append(segment)
    result = "/".join(output)
    if path.startswith("/") and not result.startswith("/"):
        result = "/" + result
    return result


def _ipv4(host: str) -> str:
    """The WHATWG IPv4 parser: 1 to 4 parts, each decimal, octal (leading 0) or hex (0x); the
    last part fills the remaining bytes."""
    parts = host.split(".")
    if len(parts) > 4:
        raise UrlError("url:bad-ipv4", host)
    numbers = []
    for part in parts:
        if part.startswith("0x"):
            digits = part[2:]
            if not _HEX_RE.match(digits):
                raise UrlError("url:bad-ipv4", host)
            numbers.append(int(digits, 16) if digits else 0)
        elif len(part) > 1 and part[0] == "0":
            if not _OCTAL_RE.match(part, 1):
                raise UrlError("url:bad-ipv4", host)
            numbers.append(int(part[1:], 8))
        elif part.isdigit():
            numbers.append(int(part))
        else:
            raise UrlError("url:bad-ipv4", host)
    last = numbers.pop()
    if any(number > 255 for number in numbers) or last >= 256 ** (4 - len(numbers)):
        raise UrlError("url:bad-ipv4", host)
    address = last
    for index, number in enumerate(numbers):
        address += number << (8 * (3 - index))
    return f"{address >> 24}.{(address >> 16) & 255}.{(address >> 8) & 255}.{address & 255}"


def _ipv6(literal: str) -> str:
    """An IPv6 address without its brackets, in RFC 5952 form (also the WHATWG serialisation)."""
    if "%" in literal:  # a zone id: not in URLs
        raise UrlError("url:bad-ipv6", literal)
    try:
        packed = ipaddress.IPv6Address(literal).packed
    except ValueError:
        raise UrlError("url:bad-ipv6", literal) from None
    pieces = [packed[i] << 8 | packed[i + 1] for i in range(0, 16, 2)]
    # The first longest run of two or more zero pieces becomes '::'.
    best_start, best_length, start = -1, 1, -1
    for index, piece in enumerate([*pieces, 1]):
        if piece == 0:
            if start < 0:
                start = index
        elif start >= 0:
            if index - start > best_length:
                best_start, best_length = start, index - start
            start = -1
    text = [f"{piece:x}" for piece in pieces]
    if best_start < 0:
        return ":".join(text)
    head = ":".join(text[:best_start])
    tail = ":".join(text[best_start + best_length :])
    return f"{head}::{tail}"


def _to_ascii(host: str) -> str:
    """An internationalised host name in punycode (UTS 46, with IDNA 2003 as fallback)."""
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except (UnicodeError, ValueError):
        pass
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        raise UrlError("url:bad-idn-host", host) from None


def _host(host: str) -> str:
    """The canonical form of a host that is not an IPv6 literal."""
    if "%" in host:
        try:
            host = unquote(host, errors="strict")
        except UnicodeDecodeError:
            raise UrlError("url:bad-host", host) from None
    if host.isascii():
        host = host.lower().rstrip(".")
    else:
        if len(host) > 4 * 253:
            raise UrlError("url:bad-host", host)
        host = _to_ascii(host.rstrip(".\u3002\uff0e\uff61")).lower().rstrip(".")
    if not host or len(host) > 253:
        raise UrlError("url:bad-host", host)
    last = host[host.rfind(".") + 1 :]
    if last.isdigit() or (last.startswith("0x") and _HEX_RE.match(last, 2)):
        return _ipv4(host)
    if not _HOST_RE.match(host):
        raise UrlError("url:bad-host", host)
    return host


@functools.lru_cache(maxsize=4096)
def _authority(authority: str, scheme: str) -> str:
    """User info, host and non-default port in canonical form (cached: hosts repeat)."""
    userinfo = ""
    at = authority.rfind("@")
    if at >= 0:
        userinfo, authority = authority[:at], authority[at + 1 :]
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise UrlError("url:unparseable", authority)
        host = f"[{_ipv6(authority[1:close])}]"
        port = authority[close + 1 :]
        if port:
            if port[0] != ":":
                raise UrlError("url:unparseable", authority)
            port = port[1:]
    else:
        host, _, port = authority.partition(":")
        if not host:
            raise UrlError("url:no-host", authority)
        host = _host(host)
    if port:
        digits = port.lstrip("0")
        if not (port.isascii() and port.isdigit()) or len(digits) > 5:
            raise UrlError("url:bad-port", authority)
        number = int(digits or "0")
        if number == 0 or number > 65535:
            raise UrlError("url:bad-port", authority)
        if number != _DEFAULT_PORTS[scheme]:
            host = f"{host}:{number}"
    if userinfo:
        user, _, password = userinfo.partition(":")
        if password:
            return f"{_normalize_percent(user)}:{_normalize_percent(password)}@{host}"
        if user:
            return f"{_normalize_percent(user)}@{host}"
    return host


def _clean(text: str) -> str:
    """The WHATWG input rules: C0 controls and spaces around stripped, tabs and newlines
    removed."""
    if len(text) > _MAX_INPUT_LENGTH:
        raise UrlError("url:too-long", text)
    text = text.strip(_C0_OR_SPACE)
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.translate(_TAB_OR_NEWLINE)
    return text


def _param_pattern(names: Iterable[str], before: str, after: str) -> re.Pattern[str] | None:
    alternatives = "|".join(re.escape(name) for name in sorted(names))
    if not alternatives:
        return None
    return re.compile(f"{before}(?:{alternatives}){after}", re.IGNORECASE | re.ASCII)


@dataclasses.dataclass(frozen=True)
class UrlNormalizer:
    """The normalisation rules (see the module docstring), with the configurable parts.

    ``sort_query`` sorts the query parameters by name (a stable sort: repeated names keep their
    order); by default the order is kept. ``strip_params`` are the names (case-insensitive) of
    the query parameters, and path parameters of the last segment, that are removed.
    ``cache_size`` is the number of canonical forms kept (0: no cache): pages of a site repeat
    the same links, so most calls are cache hits.
    """

    sort_query: bool = _DEFAULTS.sort_query
    strip_params: frozenset[str] = DEFAULT_SESSION_PARAMS
    cache_size: int = 1 << 16
    _canonical: Callable[[str], str] = dataclasses.field(
        init=False, repr=False, compare=False, hash=False
    )
    _base: Callable[[str], tuple[str, str, str, str, str]] = dataclasses.field(
        init=False, repr=False, compare=False, hash=False
    )
    _query_params: re.Pattern[str] | None = dataclasses.field(
        init=False, repr=False, compare=False, hash=False
    )
    _path_params: re.Pattern[str] | None = dataclasses.field(
        init=False, repr=False, compare=False, hash=False
    )

    @classmethod
    def from_section(cls, section: UrlsSection) -> UrlNormalizer:
        """The normaliser the ``urls`` section describes."""
        return cls(sort_query=section.sort_query, strip_params=frozenset(section.strip_params))

    def __post_init__(self) -> None:
        if isinstance(self.strip_params, str):
            raise TypeError("strip_params: a set of parameter names, not a string")
        names = frozenset(str(name).lower() for name in self.strip_params)
        set_ = functools.partial(object.__setattr__, self)
        set_("strip_params", names)
        set_("_query_params", _param_pattern(names, "(?:^|&)", "(?:[=&]|$)"))
        set_("_path_params", _param_pattern(names, ";", "(?:[=;]|$)"))
        canonical = self._canonical_form
        if self.cache_size > 0:
            canonical = functools.lru_cache(maxsize=self.cache_size)(canonical)
        set_("_canonical", canonical)
        set_("_base", functools.lru_cache(maxsize=256)(self._base_parts))

    def __reduce__(self) -> tuple[type[UrlNormalizer], tuple[bool, frozenset[str], int]]:
        return (UrlNormalizer, (self.sort_query, self.strip_params, self.cache_size))

    # -- the public operations ------------------------------------------------------------

    def normalize(self, url: str) -> str:
        """The canonical form of an absolute http(s) URL; raises :class:`UrlError` otherwise."""
        try:
            return self._canonical(_clean(url))
        except UrlError as error:
            raise UrlError(error.reason, url) from None

    def resolve(self, base: str, href: str) -> str:
        """Resolve a link found on page ``base`` and normalise it, as a browser reads it.

        ``base`` is the page's URL (normally already canonical). Raises :class:`UrlError` for
        what cannot be an http(s) URL, with ``url`` the href as found.
        """
        try:
            ref = _clean(href)
            if ref.startswith(("http://", "https://")):
                return self._canonical(ref)
            match = _SCHEME_RE.match(ref) if ref[:1].isalpha() else None
            if match is None:
                return self._join(base, ref)
            scheme = match.group(1).lower()
            if scheme in _DEFAULT_PORTS and scheme == self._base(base)[0]:
                # http:path on an http page is relative, unless two slashes follow.
                rest = ref[match.end() :]
                if rest[:1] not in ("/", "\\") or rest[1:2] not in ("/", "\\"):
                    return self._join(base, rest)
            return self._canonical(ref)
        except UrlError as error:
            raise UrlError(error.reason, href) from None

    # -- the parts ----------------------------------------------------------------------------

    def _join(self, base: str, ref: str) -> str:
        """A reference without a scheme, against the page URL ``base``."""
        scheme, origin, directory, before_query, page = self._base(base)
        first = ref[:1]
        if first == "/" or first == "\\":
            second = ref[1:2]
            if second == "/" or second == "\\":
                return self._canonical(f"{scheme}:{ref}")
            return self._canonical(origin + ref)
        if not first or first == "#":
            return page
        if first == "?":
            return self._canonical(before_query + ref)
        return self._canonical(directory + ref)

    def _base_parts(self, base: str) -> tuple[str, str, str, str, str]:
        """(scheme, origin, directory, URL without query, URL) of a page URL, canonical."""
        try:
            page = self._canonical(_clean(base))
        except UrlError:
            raise UrlError("url:bad-base", base) from None
        scheme = page[: page.index(":")]
        query = page.find("?")
        before_query = page if query < 0 else page[:query]
        origin = page[: page.index("/", len(scheme) + 3)]
        directory = before_query[: before_query.rindex("/") + 1]
        return scheme, origin, directory, before_query, page

    def _canonical_form(self, url: str) -> str:
        """The canonical form of a cleaned absolute URL (uncached)."""
        if url.startswith("http://"):
            scheme, rest = "http", url[7:]
        elif url.startswith("https://"):
            scheme, rest = "https", url[8:]
        else:
            if not url:
                raise UrlError("url:empty", url)
            match = _SCHEME_RE.match(url)
            if match is None:
                raise UrlError("url:scheme:none", url)
            scheme = match.group(1).lower()
            if scheme not in _DEFAULT_PORTS:
                raise UrlError(f"url:scheme:{scheme}"[:40], url)
            rest = url[match.end() :]
        if rest[:1] in ("/", "\\"):
            rest = rest.lstrip("/\\")
        authority, path, query = _SPLIT_RE.match(rest).groups()  # type: ignore[union-attr]
        if not authority:
            raise UrlError("url:no-host", url)
        if len(authority) > 253 or not _SIMPLE_HOST.match(authority):
            authority = _authority(authority, scheme)
        if not path:
            path = "/"
        else:
            if "\\" in path:
                path = path.replace("\\", "/")
            if not _CLEAN_COMPONENT.match(path):
                path = _normalize_percent(path)
            if ";" in path and self._path_params is not None:
                path = self._strip_path_params(path)
            if "/." in path:
                path = _remove_dot_segments(path)
        if query:
            if not _CLEAN_COMPONENT.match(query):
                query = _normalize_percent(query)
            if self._query_params is not None and self._query_params.search(query):
                strip = self.strip_params
                query = "&".join(
                    p for p in query.split("&") if p.partition("=")[0].lower() not in strip
                )
            if self.sort_query and "&" in query:
                query = "&".join(sorted(query.split("&"), key=lambda p: p.partition("=")[0]))
            if query:
                path = f"{path}?{query}"
        result = f"{scheme}://{authority}{path}"
        if len(result) > MAX_URL_LENGTH:
            raise UrlError("url:too-long", url)
        return result

    def _strip_path_params(self, path: str) -> str:
        """Remove session-id parameters (``;jsessionid=...``) from the last path segment."""
        slash = path.rfind("/") + 1
        assert self._path_params is not None
        if not self._path_params.search(path, slash):
            return path
        segment, *params = path[slash:].split(";")
        strip = self.strip_params
        kept = [p for p in params if p.partition("=")[0].lower() not in strip]
        return path[:slash] + ";".join([segment, *kept])


#: The normaliser with the default rules (query order kept, the default session ids).
DEFAULT_NORMALIZER = UrlNormalizer()


def normalization_settings(section: UrlsSection) -> dict[str, object]:
    """What a crawl records of its ``urls`` section (with the rules' version), to refuse a
    resume that would give its URLs other identities."""
    return {
        "urls.normalization_version": NORMALIZATION_VERSION,
        "urls.sort_query": section.sort_query,
        "urls.strip_params": sorted(name.lower() for name in section.strip_params),
    }

#: Module-level operations with the default rules.
normalize = DEFAULT_NORMALIZER.normalize
resolve = DEFAULT_NORMALIZER.resolve


def host_of(url: str) -> str:
    """The host (with a non-default port) of a normalised URL: the politeness unit."""
    start = url.index("//") + 2
    end = url.find("/", start)
    netloc = url[start:] if end < 0 else url[start:end]
    return netloc.rpartition("@")[2]


def parent_directories(url: str) -> list[str]:
    """The directories above a normalised URL's path, nearest first, the root last, without
    query: ``http://h/a/b/c?x`` gives ``http://h/a/b/``, ``http://h/a/``, ``http://h/``
    (path-ascending discovery). A URL at the root has none."""
    start = url.index("//") + 2
    slash = url.find("/", start)
    if slash < 0:
        return []
    origin = url[:slash]
    path = url[slash:].partition("?")[0].partition("#")[0]
    parents = []
    end = path.rstrip("/").rfind("/") if path.endswith("/") else path.rfind("/")
    while end >= 0:
        parents.append(origin + path[: end + 1])
        end = path.rfind("/", 0, end)
    return parents


def vnode_of(host: str, vnodes: int) -> int:
    """The virtual node of a host: a hash that never changes for the life of a crawl."""
    return zlib.crc32(host.encode("utf-8")) % vnodes
