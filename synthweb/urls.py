"""Host names and the canonical URL form of the synthetic web.

The ground truth names every URL in one canonical form: ``http://`` scheme, lower-case host, no
default port, no fragment, path exactly as the model writes it (``/`` when empty). The crawler's
own normaliser must agree with :func:`canonical_url` on every link the web writes; the unit tests
check this reference against the links as served.

:func:`page_identity` goes further, as a crawler's normaliser with a URL policy must: it also
removes dot segments, decodes percent-encoded unreserved characters and upper-cases the other
escapes, and drops session ids (:data:`SESSION_ID_PARAMS`) from the query and from path
parameters. It is the identity of a page when the web writes alternative spellings
(``WebConfig.url_variant_share``); on every URL the default web writes it agrees with
:func:`canonical_url`.
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = [
    "DOMAIN",
    "SESSION_ID_PARAMS",
    "canonical_url",
    "host_index",
    "host_name",
    "nohost_name",
    "page_identity",
    "split_url",
]

#: Every synthetic host lives under this reserved (RFC 2606) domain, which never resolves.
DOMAIN = "synth.test"

_HOST_RE = re.compile(r"h(0|[1-9][0-9]*)\.synth\.test")


def host_name(index: int) -> str:
    """The name of host number ``index``: ``h{index}.synth.test``."""
    return f"h{index}.{DOMAIN}"


def nohost_name(index: int) -> str:
    """A name under the web's domain that no host answers to (the proxy says 502)."""
    return f"nohost-{index}.{DOMAIN}"


def host_index(name: str) -> int | None:
    """The index of a host name in canonical form, or None if it is not of the form h{i}."""
    match = _HOST_RE.fullmatch(name)
    return int(match.group(1)) if match else None


def canonical_url(href: str, base: str | None = None) -> str | None:
    """Resolve ``href`` against ``base`` and return its canonical form, or None.

    None means the reference is not a crawlable ``http://`` URL: another scheme (``mailto:``,
    ``javascript:`` ...), an unparsable reference (``http://[bad``) or an empty host.
    Percent-encoding and the path's case are kept as written; dot segments are removed by the
    resolution itself (RFC 3986, section 5.2).
    """
    resolved = _resolve_http(href, base)
    if resolved is None:
        return None
    netloc, parts = resolved
    path = parts.path or "/"
    query = f"?{parts.query}" if parts.query else ""
    return f"http://{netloc}{path}{query}"


def _resolve_http(href: str, base: str | None) -> tuple[str, urllib.parse.SplitResult] | None:
    """``href`` resolved against ``base``: its canonical network location (lower-case host,
    no default port) and its parts, or None if it is not a crawlable ``http://`` URL."""
    try:
        absolute = urllib.parse.urljoin(base, href) if base else href
        parts = urllib.parse.urlsplit(absolute)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() != "http" or not parts.hostname:
        return None
    host = parts.hostname.lower()
    return (host if port in (None, 80) else f"{host}:{port}"), parts


def split_url(url: str) -> tuple[str, str]:
    """Split a canonical URL into (host, path-and-query)."""
    rest = url[len("http://") :]
    slash = rest.find("/")
    if slash < 0:
        return rest, "/"
    return rest[:slash], rest[slash:]


#: Query and path parameter names of session ids (compared case-insensitively): a crawler
#: removes them, and :func:`page_identity` ignores them.
SESSION_ID_PARAMS = frozenset({"jsessionid", "phpsessid", "sid", "aspsessionid"})

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# What may stay literal in a path or query (RFC 3986 pchar, '/' and '?'); the rest is encoded.
_LITERAL = _UNRESERVED | frozenset("!$&'()*+,;=:@/?")
_HEX = frozenset("0123456789abcdefABCDEF")


def page_identity(href: str, base: str | None = None) -> str | None:
    """The canonical identity of ``href`` (resolved against ``base``), or None.

    None means the reference is not a crawlable ``http://`` URL (as for :func:`canonical_url`).
    Otherwise: ``http://``, lower-case host, no default port, no fragment; path with
    percent-encoding normalised (unreserved characters decoded, other escapes upper-cased,
    characters that may not appear literally encoded as UTF-8), dot segments removed and
    session-id path parameters (``;jsessionid=...``) dropped, ``/`` when empty; query with the
    same percent normalisation, session-id parameters dropped and the other parameters kept in
    their order, left out when nothing remains.
    """
    resolved = _resolve_http(href, base)
    if resolved is None:
        return None
    netloc, parts = resolved
    path = _remove_dot_segments(_drop_path_sessions(_normalize_percent(parts.path))) or "/"
    query = "&".join(
        param
        for param in _normalize_percent(parts.query).split("&")
        if param and not _is_session_param(param)
    )
    return f"http://{netloc}{path}?{query}" if query else f"http://{netloc}{path}"


def _is_session_param(param: str) -> bool:
    name = param.partition("=")[0]
    return urllib.parse.unquote(name).lower() in SESSION_ID_PARAMS


def _drop_path_sessions(path: str) -> str:
    if ";" not in path:
        return path
    segments = []
    for segment in path.split("/"):
        head, *params = segment.split(";")
        segments.append(";".join([head] + [p for p in params if not _is_session_param(p)]))
    return "/".join(segments)


def _normalize_percent(component: str) -> str:
    """Decode escaped unreserved characters, upper-case other escapes, encode what must be."""
    out: list[str] = []
    i = 0
    while i < len(component):
        char = component[i]
        if char == "%" and component[i + 1 : i + 2] in _HEX and component[i + 2 : i + 3] in _HEX:
            decoded = chr(int(component[i + 1 : i + 3], 16))
            out.append(decoded if decoded in _UNRESERVED else component[i : i + 3].upper())
            i += 3
            continue
        if char in _LITERAL:
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        i += 1
    return "".join(out)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986, section 5.2.4."""
    if "." not in path:
        return path
    output: list[str] = []
    while path:
        if path.startswith("../"):
            path = path[3:]
        elif path.startswith("./"):
            path = path[2:]
        elif path.startswith("/./"):
            path = path[2:]
        elif path == "/.":
            path = "/"
        elif path.startswith("/../"):
            path = path[3:]
            if output:
                output.pop()
        elif path == "/..":
            path = "/"
            if output:
                output.pop()
        elif path in (".", ".."):
            path = ""
        else:
            start = 1 if path.startswith("/") else 0
            cut = path.find("/", start)
            cut = len(path) if cut < 0 else cut
            output.append(path[:cut])
            path = path[cut:]
    return "".join(output)
