"""URL normalisation, link resolution and partitioning by host.

Normalisation follows RFC 3986 section 6 (syntax-based): lower-case scheme and host, IDN hosts
to punycode, default port removed, empty path to ``/``, dot segments removed, percent-encoding
upper-cased with unreserved characters decoded and unsafe characters encoded, fragment dropped.
The rules carry a version (:data:`NORMALIZATION_VERSION`) because a change of rules changes the
identity of URLs already in a crawl's state.

Every URL that enters the crawl passes through :func:`normalize` exactly once, where it is
born (seed injection, link extraction), so the loop only carries canonical URLs.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import zlib
from urllib.parse import SplitResult, urljoin, urlsplit

__all__ = [
    "NORMALIZATION_VERSION",
    "UrlError",
    "host_of",
    "normalize",
    "resolve",
    "vnode_of",
]

NORMALIZATION_VERSION = 1

MAX_URL_LENGTH = 2048

_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Characters that may appear literally in a path or query (RFC 3986 pchar plus '/' and '?').
_ALLOWED_LITERAL = _UNRESERVED | frozenset("!$&'()*+,;=:@/?%")
_PERCENT_RE = re.compile(r"%([0-9A-Fa-f]{2})")
_STRIP_INSIDE = str.maketrans("", "", "\t\n\r")
_HOST_LABEL_RE = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$")
# Fast paths: a component with nothing to decode or encode, and a host that is already a
# lower-case DNS name (no port, no user info, not an IPv4 literal).
_CLEAN_COMPONENT = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*\Z")
_SIMPLE_HOST = re.compile(
    r"(?=.*[a-z_-])(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?\Z"
)
_SCHEME_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


class UrlError(ValueError):
    """A string that cannot be a crawlable URL. ``reason`` is a short machine-readable code."""

    def __init__(self, reason: str, url: str) -> None:
        super().__init__(f"{reason}: {url[:200]!r}")
        self.reason = reason
        self.url = url


def _normalize_percent(component: str) -> str:
    """Upper-case escapes, decode unreserved characters, encode anything not allowed."""

    if _CLEAN_COMPONENT.match(component):
        return component

    def fix_escape(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    component = _PERCENT_RE.sub(fix_escape, component)
    if all(c in _ALLOWED_LITERAL for c in component) and not re.search(
        r"%(?![0-9A-F]{2})", component
    ):
        return component
    out = []
    i = 0
    while i < len(component):
        char = component[i]
        if char == "%" and _PERCENT_RE.match(component, i):
            out.append(component[i : i + 3])
            i += 3
            continue
        if char in _ALLOWED_LITERAL and char != "%":
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        i += 1
    return "".join(out)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4."""
    if "/." not in path:
        return path
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


def _normalize_host(host: str, url: str) -> str:
    if not host:
        raise UrlError("url:no-host", url)
    host = _PERCENT_RE.sub(lambda m: chr(int(m.group(1), 16)), host).lower().rstrip(".")
    if host.startswith("["):
        try:
            return "[" + ipaddress.IPv6Address(host.strip("[]")).compressed + "]"
        except ValueError:
            raise UrlError("url:bad-ipv6", url) from None
    if host.replace(".", "").isdigit():
        try:
            return str(ipaddress.IPv4Address(host))
        except ValueError:
            raise UrlError("url:bad-ipv4", url) from None
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise UrlError("url:bad-idn-host", url) from None
    if len(host) > 253 or not all(_HOST_LABEL_RE.match(label) for label in host.split(".")):
        raise UrlError("url:bad-host", url)
    return host


def normalize(url: str) -> str:
    """The canonical form of an absolute http(s) URL; raises :class:`UrlError` otherwise."""
    return _normalize(url.strip("\x00\t\n\r\x0b\x0c ").translate(_STRIP_INSIDE), url)


@functools.lru_cache(maxsize=1 << 16)
def _normalize(cleaned: str, url: str) -> str:
    # Cached: pages of a site repeat the same links (navigation), so most calls are hits.
    if not cleaned:
        raise UrlError("url:empty", url)
    try:
        parts = urlsplit(cleaned)
    except ValueError as error:
        raise UrlError("url:unparseable", url) from error
    # Outside the try above: UrlError is a ValueError and must keep its own reason.
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise UrlError(f"url:scheme:{scheme or 'none'}"[:40], url)
    netloc = parts.netloc
    if not netloc:
        raise UrlError("url:no-host", url)
    if len(netloc) > 253 or not _SIMPLE_HOST.match(netloc):
        netloc = _normalize_netloc(parts, scheme, url)
    path = parts.path
    if not path:
        path = "/"
    elif not _CLEAN_COMPONENT.match(path):
        path = _normalize_percent(path.replace("\\", "/")) or "/"
    path = _remove_dot_segments(path)
    query = _normalize_percent(parts.query)
    result = f"{scheme}://{netloc}{path}?{query}" if query else f"{scheme}://{netloc}{path}"
    if len(result) > MAX_URL_LENGTH:
        raise UrlError("url:too-long", url)
    return result


def _normalize_netloc(parts: SplitResult, scheme: str, url: str) -> str:
    """Host (lower case, punycode, canonical IP literal), non-default port and user info."""
    try:
        hostname = parts.hostname
    except ValueError as error:
        raise UrlError("url:unparseable", url) from error
    try:
        port = parts.port
    except ValueError:
        raise UrlError("url:bad-port", url) from None
    host = _normalize_host(
        hostname if not parts.netloc.rpartition("@")[2].startswith("[") else f"[{hostname}]",
        url,
    )
    netloc = host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        if port == 0:
            raise UrlError("url:bad-port", url)
        netloc = f"{host}:{port}"
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    if userinfo:
        netloc = f"{_normalize_percent(userinfo)}@{netloc}"
    return netloc


def resolve(base: str, href: str) -> str:
    """Resolve a link found on page ``base`` and normalise it (browser-like whitespace rules).

    ``base`` must be a normalised URL (as every page URL of the crawl is). Links that are
    absolute, or relative to the host's root, skip the general RFC 3986 merge.
    """
    cleaned = href.strip("\x00\t\n\r\x0b\x0c ").translate(_STRIP_INSIDE).replace("\\", "/")
    if cleaned.startswith(("http://", "https://")):
        return _normalize(cleaned, href)
    if cleaned.startswith("/") and not cleaned.startswith("//"):
        root = base.find("/", base.find("//") + 2)
        if root > 0:
            return _normalize(base[:root] + cleaned, href)
    elif cleaned and cleaned[0] not in "/?#" and ":" not in cleaned.split("/", 1)[0]:
        # A relative path: merge with the base's directory (dot segments go in _normalize).
        query = base.find("?")
        base_path = base if query < 0 else base[:query]
        return _normalize(base_path[: base_path.rfind("/") + 1] + cleaned, href)
    try:
        absolute = urljoin(base, cleaned)
    except ValueError as error:
        raise UrlError("url:unparseable", href) from error
    return _normalize(absolute, href)


def host_of(url: str) -> str:
    """The host (with a non-default port) of a normalised URL: the politeness unit."""
    start = url.index("//") + 2
    end = url.find("/", start)
    netloc = url[start:] if end < 0 else url[start:end]
    return netloc.rpartition("@")[2]


def vnode_of(host: str, vnodes: int) -> int:
    """The virtual node of a host: a hash that never changes for the life of a crawl."""
    return zlib.crc32(host.encode("utf-8")) % vnodes
