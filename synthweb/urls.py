"""Host names and the canonical URL form of the synthetic web.

The ground truth names every URL in one canonical form: ``http://`` scheme, lower-case host, no
default port, no fragment, path exactly as the model writes it (``/`` when empty). The crawler's
own normaliser must agree with :func:`canonical_url` on every link the web writes; the unit tests
check this reference against the links as served.
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = [
    "DOMAIN",
    "canonical_url",
    "host_index",
    "host_name",
    "nohost_name",
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
    try:
        absolute = urllib.parse.urljoin(base, href) if base else href
        parts = urllib.parse.urlsplit(absolute)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() != "http" or not parts.hostname:
        return None
    host = parts.hostname.lower()
    netloc = host if port in (None, 80) else f"{host}:{port}"
    path = parts.path or "/"
    query = f"?{parts.query}" if parts.query else ""
    return f"http://{netloc}{path}{query}"


def split_url(url: str) -> tuple[str, str]:
    """Split a canonical URL into (host, path-and-query)."""
    rest = url[len("http://") :]
    slash = rest.find("/")
    if slash < 0:
        return rest, "/"
    return rest[:slash], rest[slash:]
