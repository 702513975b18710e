"""The hostile profile of the synthetic web: servers that misbehave, for a hardened fetcher.

Off unless ``WebConfig.hostile`` is on (:meth:`~synthweb.config.WebConfig.with_hostile_profile`);
off, the web, its ground truth and its audit are exactly as without this module. On, the home
page of ``h0.synth.test`` links the home page of every hostile host (:data:`HOSTILE_HOSTS`, each
linking every page of its host) and every private address of :data:`PRIVATE_URLS`:

- ``x-retry`` (:data:`RETRY_PATHS`): 429 or 503 with ``Retry-After`` (seconds, or an HTTP-date)
  the first time each URL is requested, 200 afterwards; the log line has ``retry_at``;
- ``x-trickle``: ``/trickle`` sends its body at :data:`TRICKLE_BYTES_PER_SECOND` for
  ``WebConfig.hostile_trickle_seconds``, while the server serves other connections;
- ``x-broken`` (:data:`BROKEN_PATHS`, one fault a path): a TCP reset, a short body, bad
  chunking, bad gzip, a gzip bomb (``WebConfig.hostile_bomb_bytes``), a big page
  (``hostile_big_page_bytes``), a 64 KiB header, 1,000 headers, a redirect loop
  (:data:`LOOP_PATHS`);
- the private addresses: the proxy answers them with :data:`PRIVATE_STATUS` (421) and logs
  ``fault: "private-address"``;
- robots.txt cases: ``x-robots-stall`` never answers (unreachable: nothing else there may be
  fetched), ``x-robots-moved`` redirects once, ``x-robots-chain`` :data:`ROBOTS_CHAIN_LENGTH`
  times, and ``x-robots-big`` (:func:`big_robots`) puts a rule past :data:`ROBOTS_LIMIT` and
  cuts a line right after ``Disallow: /`` at :data:`ROBOTS_CUT`.

Every host is in ``synth.test``. The ground truth is :class:`synthweb.truth.HostileTruth`,
checked by :func:`synthweb.audit.audit_hostile`. This module needs no model: names, the
catalogue of paths, raw answers.
"""

from __future__ import annotations

import dataclasses
import email.utils
import math
import struct
import zlib

from synthweb.urls import DOMAIN

__all__ = [
    "BROKEN_HOST",
    "BROKEN_PATHS",
    "HOSTILE_HOSTS",
    "PRIVATE_HOSTS",
    "PRIVATE_STATUS",
    "PRIVATE_URLS",
    "RETRY_HOST",
    "RETRY_PATHS",
    "ROBOTS_BIG_HOST",
    "ROBOTS_CHAIN_HOST",
    "ROBOTS_CHAIN_LENGTH",
    "ROBOTS_CUT",
    "ROBOTS_MOVED_HOST",
    "ROBOTS_STALL_HOST",
    "TRICKLE_HOST",
    "Special",
    "is_hostile_host",
    "is_private_host",
    "role",
]

RETRY_HOST = f"x-retry.{DOMAIN}"
TRICKLE_HOST = f"x-trickle.{DOMAIN}"
BROKEN_HOST = f"x-broken.{DOMAIN}"
ROBOTS_STALL_HOST = f"x-robots-stall.{DOMAIN}"
ROBOTS_MOVED_HOST = f"x-robots-moved.{DOMAIN}"
ROBOTS_CHAIN_HOST = f"x-robots-chain.{DOMAIN}"
ROBOTS_BIG_HOST = f"x-robots-big.{DOMAIN}"
PRIVATE_DNS_HOST = f"x-private-dns.{DOMAIN}"

#: path -> (first status, Retry-After form: "delta" seconds or "date").
RETRY_PATHS = {
    "/retry/429/a": (429, "delta"),
    "/retry/429/b": (429, "delta"),
    "/retry/503/a": (503, "delta"),
    "/retry/429-date/a": (429, "date"),
}
#: The faults of the broken host: path -> fault name (also the ``fault`` of its log lines).
BROKEN_PATHS = {
    "/reset": "reset",
    "/short-body": "short-body",
    "/bad-chunked": "bad-chunked",
    "/bad-gzip": "bad-gzip",
    "/bomb": "bomb",
    "/big": "big",
    "/huge-header": "huge-header",
    "/many-headers": "many-headers",
}
LOOP_PATHS = {"/loop/a": "/loop/b", "/loop/b": "/loop/a"}
ROBOTS_CHAIN_LENGTH = 6
#: RFC 9309, section 2.5: the parsing limit a crawler must at least support.
ROBOTS_LIMIT = 500 * 1024
#: Where the big robots.txt has a line cut after ``Disallow: /`` (a crawler's 512 KiB limit).
ROBOTS_CUT = 512 * 1024
TRICKLE_BYTES_PER_SECOND = 4
#: Seconds between two writes of the trickle.
TRICKLE_INTERVAL = 0.5
PRIVATE_STATUS = 421
PRIVATE_URLS = (
    "http://127.0.0.1/",
    "http://10.0.0.1/",
    "http://[::1]/",
    "http://localhost/",
    "http://169.254.169.254/latest/meta-data/",
    f"http://{PRIVATE_DNS_HOST}/",
)
PRIVATE_HOSTS = frozenset({"127.0.0.1", "10.0.0.1", "[::1]", "localhost", "169.254.169.254"}) | {
    PRIVATE_DNS_HOST
}

# host -> its pages: path -> role.
_CATALOGUE: dict[str, dict[str, str]] = {
    RETRY_HOST: {"/": "home"} | {path: "retry" for path in RETRY_PATHS},
    TRICKLE_HOST: {"/": "home", "/trickle": "trickle", "/fast": "page"},
    BROKEN_HOST: {"/": "home", "/ok": "page"}
    | dict(BROKEN_PATHS)
    | {path: "redirect" for path in LOOP_PATHS},
    ROBOTS_STALL_HOST: {"/": "home", "/p/1": "page"},
    ROBOTS_MOVED_HOST: {"/": "home", "/p/1": "page", "/secret/1": "page"},
    ROBOTS_CHAIN_HOST: {"/": "home", "/p/1": "page"},
    ROBOTS_BIG_HOST: {"/": "home", "/p/1": "page", "/private/1": "page", "/late/1": "page"},
}
#: The hostile hosts, in the order h0's home page links them.
HOSTILE_HOSTS = tuple(_CATALOGUE)
#: Roles whose request is "once, outcome an error" (the fault names).
FAULTS = frozenset(BROKEN_PATHS.values()) | {"trickle"}


def is_hostile_host(host: str) -> bool:
    """Whether ``host`` is one of :data:`HOSTILE_HOSTS` (private hosts are not)."""
    return host in _CATALOGUE


def is_private_host(host: str) -> bool:
    """Whether ``host`` (as the server logs it: lower-case, no ``:80``) is a private address."""
    return host in PRIVATE_HOSTS


def paths(host: str) -> tuple[str, ...]:
    """The paths of hostile ``host``, home page first."""
    return tuple(_CATALOGUE[host])


def role(host: str, path: str) -> str | None:
    """What ``path`` of hostile ``host`` is: ``home``, ``page``, ``redirect``, ``retry``, a
    fault name (:data:`FAULTS`), or None (404)."""
    return _CATALOGUE.get(host, {}).get(path)


def home_links(host: str) -> tuple[tuple[str, str], ...]:
    """(href, URL) of the links of the home page of hostile ``host``."""
    return tuple((path, f"http://{host}{path}") for path in _CATALOGUE[host] if path != "/")


def entry_links() -> tuple[tuple[str, str], ...]:
    """(href, URL) the profile adds to h0's home page: hostile homes, then private addresses."""
    homes = tuple((f"http://{h}/", f"http://{h}/") for h in HOSTILE_HOSTS)
    return homes + tuple((url, url) for url in PRIVATE_URLS)


def redirect_location(host: str, path: str) -> str | None:
    """The Location of a redirect of the loop (absolute), or None."""
    target = LOOP_PATHS.get(path) if host == BROKEN_HOST else None
    return None if target is None else f"http://{host}{target}"


# -- robots.txt ------------------------------------------------------------------------------

ALLOW_ALL = b"User-agent: *\nDisallow:\n"


def robots_chain_paths() -> tuple[str, ...]:
    """The redirect targets of the long chain, in order (the last one answers 200)."""
    return tuple(f"/robots-chain/{n}" for n in range(1, ROBOTS_CHAIN_LENGTH + 1))


def robots_answer(host: str, path: str) -> tuple[int, tuple[tuple[str, str], ...], bytes] | None:
    """(status, headers, body) for the robots.txt paths of hostile ``host``; None if ``path``
    is none (the stall is the server's, see :meth:`Special.stall`)."""
    text = (("Content-Type", "text/plain; charset=utf-8"),)
    if host == ROBOTS_MOVED_HOST:
        if path == "/robots.txt":
            return 301, (("Location", f"http://{host}/robots-moved.txt"),), b"moved\n"
        if path == "/robots-moved.txt":
            return 200, text, b"User-agent: *\nDisallow: /secret/\n"
        return None
    if host == ROBOTS_CHAIN_HOST:
        chain = ("/robots.txt",) + robots_chain_paths()
        if path in chain[:-1]:
            target = chain[chain.index(path) + 1]
            return 302, (("Location", f"http://{host}{target}"),), b"moved\n"
        return (200, text, ALLOW_ALL) if path == chain[-1] else None
    if path != "/robots.txt":
        return None
    if host == ROBOTS_BIG_HOST:
        return 200, text, big_robots()
    return 200, text, ALLOW_ALL


def robots_extra_paths(host: str) -> tuple[str, ...]:
    """Paths other than /robots.txt that a crawler fetching the robots.txt of ``host`` may
    request (redirect targets)."""
    if host == ROBOTS_MOVED_HOST:
        return ("/robots-moved.txt",)
    if host == ROBOTS_CHAIN_HOST:
        return robots_chain_paths()
    return ()


_BIG_ROBOTS: bytes | None = None


def big_robots() -> bytes:
    """The robots.txt of the big host: ``Disallow: /private/``, a comment, the archive's
    ``Disallow`` lines past :data:`ROBOTS_LIMIT` bytes (one of them cut at :data:`ROBOTS_CUT`
    right after ``Disallow: /``), then ``Disallow: /late/`` (520 KiB in all)."""
    global _BIG_ROBOTS
    if _BIG_ROBOTS is None:
        head = b"User-agent: *\nDisallow: /private/\n"
        size = len(b"Disallow: /archive/1993/zz-000000/\n")
        comment = b"# archive".ljust((ROBOTS_CUT - len(head) - len(b"Disallow: /")) % size - 1,
                                     b".") + b"\n"
        count = (ROBOTS_LIMIT + 20 * 1024 - len(head)) // size + 1
        archive = b"".join(b"Disallow: /archive/1993/zz-%06d/\n" % n for n in range(1, count))
        _BIG_ROBOTS = head + comment + archive + b"Disallow: /late/\n"
    return _BIG_ROBOTS


# -- page bodies -----------------------------------------------------------------------------


def html_page(title: str, links: tuple[tuple[str, str], ...] = ()) -> bytes:
    """A small HTML page with ``links`` (href, ...)."""
    items = "".join(
        f'<li><a href="{href}">link {i}</a></li>\n' for i, (href, _) in enumerate(links)
    )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title></head>\n'
        f"<body><h1>{title}</h1>\n<ul>\n{items}</ul>\n</body></html>\n"
    ).encode()


def big_page(size: int) -> bytes:
    """A valid HTML page of exactly ``size`` bytes (at least 100)."""
    head = b"<!DOCTYPE html>\n<html><head><title>big</title></head><body><p>"
    tail = b"</p></body></html>\n"
    return head + b"x" * max(0, size - len(head) - len(tail)) + tail


def bad_gzip() -> bytes:
    """Bytes that are no gzip stream (not even its magic number)."""
    return b"this is not gzip at all \x00\x01\x02" * 20


_BOMBS: dict[int, bytes] = {}


def gzip_bomb(size: int) -> bytes:
    """A gzip stream (RFC 1952, valid CRC and size) of ``size`` zero bytes, about size / 1030
    bytes long; cached. A raw deflate block of 1 MiB of zeros ends in a full flush, which resets
    the compressor, so the same block repeats."""
    bomb = _BOMBS.get(size)
    if bomb is None:
        mib = 1 << 20
        zeros = bytes(mib)
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
        whole, rest = divmod(size, mib)
        crc = 0
        for _ in range(whole):
            crc = zlib.crc32(zeros, crc)
        crc = zlib.crc32(bytes(rest), crc)
        tail = compressor.compress(bytes(rest)) + compressor.flush(zlib.Z_FINISH)
        header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
        trailer = struct.pack("<II", crc, size & 0xFFFFFFFF)
        bomb = _BOMBS[size] = header + block * whole + tail + trailer
    return bomb


def huge_header() -> tuple[tuple[str, str], ...]:
    """One header of 64 KiB."""
    return (("X-Huge", "h" * (64 * 1024)),)


def many_headers() -> tuple[tuple[str, str], ...]:
    """1,000 headers."""
    return tuple((f"X-Many-{n}", str(n)) for n in range(1000))


def retry_after(form: str, seconds: int, now: float) -> tuple[str, float]:
    """(Retry-After value, epoch time before which the client must not come back)."""
    if form == "date":
        at = math.ceil(now) + seconds
        return email.utils.formatdate(at, usegmt=True), float(at)
    return str(seconds), now + seconds


# -- answers the server streams itself ----------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Special:
    """An answer :class:`synthweb.server.SyntheticWebService` sends by hand, not as one write.

    ``fault``: ``trickle`` (write ``head``, then ``body`` a few bytes at a time over
    ``seconds``), ``reset`` (write ``head`` and ``body``, then reset the connection),
    ``short-body`` and ``bad-chunked`` (write ``head`` and ``body``, then close), ``stall``
    (write nothing for ``seconds``, then close). ``status`` is what the log records (0: none
    sent).
    """

    fault: str
    status: int
    head: bytes = b""
    body: bytes = b""
    seconds: float = 0.0

    @classmethod
    def stall(cls, seconds: float) -> Special:
        return cls("stall", 0, seconds=seconds)


def _head(status: int, reason: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}"] + [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def special(host: str, path: str, *, trickle_seconds: float) -> Special | None:
    """The :class:`Special` answer of ``path`` on ``host``, if it has one (robots.txt of the
    stall host aside: the server knows its time)."""
    kind = role(host, path)
    html = ("Content-Type", "text/html; charset=utf-8")
    if kind == "trickle":
        size = max(64, int(TRICKLE_BYTES_PER_SECOND * trickle_seconds))
        body = big_page(size)
        head = _head(200, "OK", [html, ("Content-Length", str(len(body)))])
        return Special("trickle", 200, head, body, trickle_seconds)
    if kind == "reset":
        body = big_page(8192)
        head = _head(200, "OK", [html, ("Content-Length", str(len(body)))])
        return Special("reset", 200, head, body[: len(body) // 2])
    if kind == "short-body":
        body = html_page("short body")
        head = _head(200, "OK", [html, ("Content-Length", str(len(body) + 1000))])
        return Special("short-body", 200, head + b"", body)
    if kind == "bad-chunked":
        head = _head(200, "OK", [html, ("Transfer-Encoding", "chunked")])
        body = b"10\r\n<html><body>ok,\r\nzz;q\r\nnot a chunk size\r\n0\r\n\r\n"
        return Special("bad-chunked", 200, head, body)
    return None
