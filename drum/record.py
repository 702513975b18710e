"""Keys, the fixed-width value record of a URL, and the merge rule (layout version 4).

A key (:func:`url_key`) is BLAKE2b with an 8-byte digest of the normalised URL's UTF-8 bytes,
read as a little-endian u64 (not the first 8 bytes of the 64-byte digest, which differ): the
same in every process and on every machine (never Python's ``hash()``). Two URLs that collide
make the second look "seen"; at 10^8 URLs in one DRUM the chance of any collision is about
3 x 10^-4 (birthday bound), IRLBot's trade-off too.

A record (:data:`RECORD`) is 136 bytes, little-endian, without padding; each field with its
merge rule (:func:`combine`):

======  ================  ====  ================================================================
offset  field             type  meaning; merge rule
======  ================  ====  ================================================================
0       discovered_ms     i8    first discovery; min over non-zero (0 = unknown)
8       status_ms         i8    time of ``status``; with the status (below)
16      next_fetch_ms     i8    when due (NEVER = not again); the winner's if it is an outcome,
                                else the min over discoveries
24      leased_until_ms   i8    handed out for fetching until then; max
32      score             f4    the URL's cash (OPIC); sum
36      host              u4    32-bit hash of the host; non-zero wins
40      payload_pos       u8    the URL's position in the payload log; the oldest record with one
48      http_status       u2    with the status
50      reason            u2    with the status: index into the manifest's reason table
52      depth             u2    hops from a seed; min (NO_DEPTH = unknown)
54      fetch_count       u2    attempts; sum, saturating at 65535
56      failure_count     u2    failed attempts; sum, saturating at 65535
58      payload_len       u2    the URL's length in the log (0 = none); with ``payload_pos``
60      reserved          u2    0; the oldest record's
62      status            u1    :class:`DrumStatus`
63      flags             u1    the caller's bits; bitwise or
64      recrawl_s         u4    time (s) of the outcome the recrawl fields come from (0 = none);
                                the greatest brings all of :data:`RECRAWL_FIELDS`, ties to newer
68      interval_s        u4    recrawl interval (s); the recrawl holder's, else the least
                                non-zero (a sitemap's ``changefreq`` hint)
72      digest            u8    64 bits of the last capture's content digest (0 = none)
80      modified_s        u4    the last capture's Last-Modified (s; 0 = none)
84      observed_s        u4    content last seen (a 2xx or a 304; s)
88      captured_s        u4    content last archived in full (a 2xx; s)
92      visits            u1    content observations in the change-rate estimate
93      changes           u1    changes seen among them
94      failures_in_row   u1    failed attempts since the last success
95      etag_info         u1    bits 0-5: the tag's length or packed form (:func:`pack_etag`);
                                bit 6: weak ETag; bit 7: ``digest`` is a simhash
96      etag              S32   the ETag's opaque tag, or a longer one packed (one that does not
                                pack is not kept: then only If-Modified-Since is asked)
128     announced_s       u4    a sitemap's latest ``lastmod`` (s); max; newer than
                                ``recrawl_s``, it makes the URL due whatever ``next_fetch_ms``
132     shape             u4    32-bit hash of the URL's shape within its host; max (0 = none)
======  ================  ====  ================================================================

The status of the greatest (class, ``status_ms``) wins, ties to the newer record: class 0 is
NONE (a lease or counters only), 1 UNFETCHED (a discovery), 2 an outcome or QUEUED. So
unfetched + unfetched sums the scores and keeps the earliest next fetch, an outcome beats a
discovery, and a late outcome is counted but replaces no newer one (flink-crawler's
DefaultUrlStateMerger). Every rule is associative, and all but the status winner (ties broken
by age) commutative: the DRUM folds a buffer to one delta record per key and the deltas into
the main run later, with the same result as one by one. Earlier layouts are prefixes of this
one (64 and 128 bytes): :func:`upgrade` reads their files.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "DIGEST_IS_SIMHASH",
    "ETAG_LENGTH_MASK",
    "ETAG_WEAK",
    "FAILURE_STATUSES",
    "LAYOUT_VERSION",
    "MAX_ETAG_BYTES",
    "NEVER",
    "NO_DEPTH",
    "PAYLOAD_FIELDS",
    "READABLE_LAYOUTS",
    "RECORD",
    "RECRAWL_FIELDS",
    "DrumStatus",
    "ReasonTable",
    "announced",
    "combine",
    "combine_groups",
    "combine_indexed",
    "combine_one",
    "concat",
    "discoveries",
    "host_key",
    "neutral",
    "next_fetch_times",
    "outcomes",
    "pack_etag",
    "record_dict",
    "select",
    "status_class",
    "take",
    "unpack_etag",
    "upgrade",
    "url_key",
    "url_keys",
]

#: Version of :data:`RECORD` and of the merge rule. Files and journals carry it.
#: 2: one payload position in the DRUM's payload log instead of (segment, offset).
#: 3: 128 bytes: the recrawl fields (interval, digest, validators, change counts) added.
#: 4: 136 bytes: a sitemap's announcement of new content (``announced_s``) added.
LAYOUT_VERSION = 4
#: Earlier layouts this code reads (their records widened by :func:`upgrade`).
READABLE_LAYOUTS = {2: 64, 3: 128, 4: 136}

#: ``next_fetch_ms`` of a URL never due again.
NEVER = np.iinfo(np.int64).max
#: ``depth`` when unknown.
NO_DEPTH = 0xFFFF

RECORD = np.dtype(
    [
        ("discovered_ms", "<i8"),
        ("status_ms", "<i8"),
        ("next_fetch_ms", "<i8"),
        ("leased_until_ms", "<i8"),
        ("score", "<f4"),
        ("host", "<u4"),
        ("payload_pos", "<u8"),
        ("http_status", "<u2"),
        ("reason", "<u2"),
        ("depth", "<u2"),
        ("fetch_count", "<u2"),
        ("failure_count", "<u2"),
        ("payload_len", "<u2"),
        ("reserved", "<u2"),
        ("status", "u1"),
        ("flags", "u1"),
        ("recrawl_s", "<u4"),
        ("interval_s", "<u4"),
        ("digest", "<u8"),
        ("modified_s", "<u4"),
        ("observed_s", "<u4"),
        ("captured_s", "<u4"),
        ("visits", "u1"),
        ("changes", "u1"),
        ("failures_in_row", "u1"),
        ("etag_info", "u1"),
        ("etag", "S32"),
        ("announced_s", "<u4"),
        ("shape", "<u4"),
    ]
)
assert RECORD.itemsize == 136

#: The fields that travel together with ``recrawl_s`` (the merge takes them from one record).
RECRAWL_FIELDS = (
    "recrawl_s", "interval_s", "digest", "modified_s", "observed_s", "captured_s", "visits",
    "changes", "failures_in_row", "etag_info", "etag",
)
#: ``etag_info`` bits.
ETAG_LENGTH_MASK = 0x3F
ETAG_WEAK = 0x40
DIGEST_IS_SIMHASH = 0x80
#: The longest opaque tag an ETag may have to be kept as it is (longer ones are packed when
#: they can be: :func:`pack_etag`).
MAX_ETAG_BYTES = 32
# Codes of packed tags in the length bits of ``etag_info`` (a plain tag's length is <= 32):
# 64 hex digits (a SHA-256) as 32 bytes, in lower or upper case; an even run of hex digits as
# bytes after a byte giving their count, then the rest of the tag as it is (an MD5 and a
# suffix: S3's multipart "<md5>-<parts>", Netlify's "<md5>-ssl-df"), lower or upper case.
_PACKED_HEX64, _PACKED_HEX64_UPPER, _PACKED_PREFIX, _PACKED_PREFIX_UPPER = 63, 62, 61, 60
_LOWER_HEX = frozenset("0123456789abcdef")
_UPPER_HEX = frozenset("0123456789ABCDEF")


def pack_etag(tag: str) -> tuple[bytes, int] | None:
    """An ETag's opaque tag as the record keeps it: ``(bytes, length code)`` for
    ``etag`` and the length bits of ``etag_info``: the tag itself when it has at most
    :data:`MAX_ETAG_BYTES` characters, else a packed form of a long tag made of hex digits
    (with a suffix), else None (not kept). ASCII tags only (RFC 9110's etagc)."""
    data = tag.encode("ascii", "replace")
    if len(data) <= MAX_ETAG_BYTES:
        return data, len(data)
    for digits, whole, prefix in ((_LOWER_HEX, _PACKED_HEX64, _PACKED_PREFIX),
                                  (_UPPER_HEX, _PACKED_HEX64_UPPER, _PACKED_PREFIX_UPPER)):
        if len(tag) == 64 and set(tag) <= digits:
            return bytes.fromhex(tag), whole
        run = 0
        while run < len(tag) and tag[run] in digits:
            run += 1
        run -= run % 2
        packed = bytes([run // 2]) + bytes.fromhex(tag[:run]) + data[run:]
        if run and len(packed) <= MAX_ETAG_BYTES:
            return packed, prefix
    return None


def unpack_etag(raw: bytes, code: int) -> str:
    """The opaque tag of a record's ``etag`` bytes and ``etag_info`` length bits (the inverse
    of :func:`pack_etag`; NumPy drops the trailing NUL bytes of ``raw``)."""
    if code <= MAX_ETAG_BYTES:
        return raw[:code].decode("ascii", "replace")
    raw = raw.ljust(MAX_ETAG_BYTES, b"\0")
    if code in (_PACKED_HEX64, _PACKED_HEX64_UPPER):
        digits, rest = raw.hex(), ""
    elif code in (_PACKED_PREFIX, _PACKED_PREFIX_UPPER) and raw[0] < MAX_ETAG_BYTES:
        size = raw[0]
        digits = raw[1:1 + size].hex()
        rest = raw[1 + size:].rstrip(b"\0").decode("ascii", "replace")
    else:
        return ""  # not a code this version writes
    upper = code in (_PACKED_HEX64_UPPER, _PACKED_PREFIX_UPPER)
    return (digits.upper() if upper else digits) + rest


# Moving whole records through a plain void view is 5 to 10 times faster than through the
# structured dtype (NumPy copies structured elements field by field).
_RAW = np.dtype(f"V{RECORD.itemsize}")


# The record as its layout 2 part, its recrawl fields (bytes 64 to 128) and the rest.
_HALVES = np.dtype([("core", "V64"), ("recrawl", "V64"), ("rest", "V8")])
if RECORD.fields["recrawl_s"][1] != 64 or RECORD.fields["announced_s"][1] != 128:
    raise AssertionError("the recrawl fields of RECORD must be its bytes 64 to 128")


def upgrade(data: bytes | memoryview, layout: int) -> np.ndarray:
    """Records of an earlier ``layout`` (:data:`READABLE_LAYOUTS`) as current records. O(n)."""
    if layout == LAYOUT_VERSION:
        return np.frombuffer(data, dtype=RECORD)
    size = READABLE_LAYOUTS.get(layout)
    if size is None or size > RECORD.itemsize:
        raise ValueError(f"records of layout {layout} cannot be read")
    old = np.frombuffer(data, dtype=np.uint8).reshape(-1, size)
    wide = np.zeros((len(old), RECORD.itemsize), dtype=np.uint8)
    wide[:, :size] = old
    return wide.reshape(-1).view(RECORD)


def announced(values: np.ndarray) -> np.ndarray:
    """Which records a sitemap announced new content of since their last fetch outcome (due
    then, whatever their next fetch time); not a retired URL (next fetch NEVER) nor one
    handed out for fetching (QUEUED), nor one never fetched (its first fetch is due anyway).
    O(n)."""
    recrawled = values["recrawl_s"]
    return (
        (values["announced_s"] > recrawled) & (recrawled > 0)
        & (values["next_fetch_ms"] != NEVER)
    )


def next_fetch_times(values: np.ndarray) -> np.ndarray:
    """Each record's next fetch time, or the time of a sitemap's announcement when that is
    earlier (:func:`announced`: due then, whatever the next fetch time). O(n)."""
    next_fetch = values["next_fetch_ms"]
    news = announced(values)
    if news.any():
        announced_ms = values["announced_s"].astype(np.int64) * 1000
        next_fetch = np.where(news, np.minimum(next_fetch, announced_ms), next_fetch)
    return next_fetch


def take(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``values[index]`` for an integer index array, fast. O(len(index))."""
    return values.view(_RAW).take(index).view(RECORD)


def select(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``values[mask]`` for a boolean mask, fast. O(len(values))."""
    return values.view(_RAW)[mask].view(RECORD)


def concat(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Records of ``parts`` one after the other, fast. O(total)."""
    if not parts:
        return np.empty(0, dtype=RECORD)
    return np.concatenate([p.view(_RAW) for p in parts]).view(RECORD)


def put(target: np.ndarray, where: np.ndarray, values: np.ndarray) -> None:
    """``target[where] = values`` (integer or boolean ``where``), fast."""
    target.view(_RAW)[where] = values.view(_RAW)


class DrumStatus(enum.IntEnum):
    """Status codes stored in a record. Names match :class:`crawl.status.Status` values."""

    NONE = 0
    UNFETCHED = 1
    FETCHED = 2
    REDIRECT = 3
    HTTP_ERROR = 4
    FETCH_ERROR = 5
    ROBOTS_DENIED = 6
    REJECTED = 7
    #: Handed to the frontier, not fetched yet (a decision with a time, like an outcome: the
    #: outcome of the fetch, newer, replaces it; next fetch NEVER, so it is never due).
    QUEUED = 8


FAILURE_STATUSES = (DrumStatus.HTTP_ERROR, DrumStatus.FETCH_ERROR)
#: The fields that say where a record's payload is (set by the DRUM, taken together).
PAYLOAD_FIELDS = ("payload_pos", "payload_len", "reserved")
_NOT_ATTEMPTS = (DrumStatus.ROBOTS_DENIED, DrumStatus.REJECTED)
_CLASS_SHIFT = 52  # status_ms < 2^52 ms (year 144,000)


def url_key(url: str | bytes) -> int:
    """The 64-bit key of a (normalised) URL. O(len(url))."""
    data = url.encode("utf-8") if isinstance(url, str) else url
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def url_keys(urls: Iterable[str | bytes]) -> np.ndarray:
    """Keys of many URLs as a uint64 array. O(total length); about 0.5 us per URL."""
    blake = hashlib.blake2b
    out = b"".join(
        blake(u.encode("utf-8") if isinstance(u, str) else u, digest_size=8).digest()
        for u in urls
    )
    return np.frombuffer(out, dtype="<u8").astype(np.uint64)


def host_key(host: str) -> int:
    """The 32-bit hash of a host stored in records (never 0: 0 means "no host")."""
    value = int.from_bytes(hashlib.blake2b(host.encode("utf-8"), digest_size=4).digest(), "little")
    return value or 1


class ReasonTable:
    """Short reason strings ("http:404", "timeout:read") as small codes; code 0 is ""."""

    MAX = 0xFFFF

    def __init__(self, reasons: Sequence[str] = ("",)) -> None:
        if not reasons or reasons[0] != "":
            raise ValueError("a reason table starts with the empty reason")
        self._names = list(reasons)
        self._codes = {name: code for code, name in enumerate(self._names)}

    def code(self, reason: str) -> int:
        """The code of a reason, added if new. O(1)."""
        code = self._codes.get(reason)
        if code is None:
            if len(self._names) > self.MAX:
                raise ValueError(f"more than {self.MAX} distinct reasons")
            code = len(self._names)
            self._names.append(reason)
            self._codes[reason] = code
        return code

    def name(self, code: int) -> str:
        return self._names[code]

    def names(self) -> list[str]:
        return list(self._names)

    def __len__(self) -> int:
        return len(self._names)


def neutral(n: int) -> np.ndarray:
    """``n`` records that change nothing when merged (the identity of the merge rule)."""
    records = np.zeros(n, dtype=RECORD)
    records["next_fetch_ms"] = NEVER
    records["depth"] = NO_DEPTH
    return records


def discoveries(
    n: int,
    *,
    now_ms: Any,
    score: Any = 1.0,
    depth: Any = 0,
    host: Any = 0,
    next_fetch_ms: Any = None,
    interval_s: Any = 0,
    announced_s: Any = 0,
    shape: Any = 0,
) -> np.ndarray:
    """Records of ``n`` URLs found as links (UNFETCHED, due at ``next_fetch_ms`` or now), with
    a recrawl interval hint ``interval_s`` (0: none), the time a sitemap announced their
    content changed, ``announced_s`` (0: none), and their ``shape`` hash (0: none).

    Arguments other than ``n`` are scalars or arrays of length ``n``.
    """
    records = neutral(n)
    records["status"] = DrumStatus.UNFETCHED
    records["discovered_ms"] = now_ms
    records["status_ms"] = now_ms
    records["next_fetch_ms"] = now_ms if next_fetch_ms is None else next_fetch_ms
    records["score"] = score
    records["depth"] = depth
    records["host"] = host
    records["interval_s"] = interval_s
    records["announced_s"] = announced_s
    records["shape"] = shape
    return records


def outcomes(
    n: int,
    *,
    status: Any,
    at_ms: Any,
    http_status: Any = 0,
    reason: Any = 0,
    next_fetch_ms: Any = NEVER,
    host: Any = 0,
    score: Any = 0.0,
) -> np.ndarray:
    """Records of ``n`` fetch outcomes (one attempt each; ROBOTS_DENIED and REJECTED are
    decisions, not attempts; HTTP_ERROR and FETCH_ERROR count as failures)."""
    records = neutral(n)
    status = np.broadcast_to(np.asarray(status, dtype=np.uint8), (n,))
    records["status"] = status
    records["status_ms"] = at_ms
    records["discovered_ms"] = at_ms
    records["http_status"] = http_status
    records["reason"] = reason
    records["next_fetch_ms"] = next_fetch_ms
    records["host"] = host
    records["score"] = score
    records["fetch_count"] = ~np.isin(status, _NOT_ATTEMPTS)
    records["failure_count"] = np.isin(status, FAILURE_STATUSES)
    return records


def status_class(status: np.ndarray) -> np.ndarray:
    """0 for NONE, 1 for UNFETCHED, 2 for an outcome."""
    return np.minimum(status, 2).astype(np.int64)


def combine_groups(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Fold each group of records into one (the merge rule, vectorised).

    ``values`` holds groups of consecutive records, each group ordered oldest first;
    ``starts`` are the groups' first indices (ascending, starting at 0). O(n) time and memory.
    """
    n = len(values)
    if n == 0 or len(starts) == n:
        return concat([values])
    sizes = np.diff(np.append(starts, n))
    multi = sizes > 1
    if np.count_nonzero(multi) * 4 < len(starts):
        # Mostly single-record groups: copy those, fold only the others.
        out = take(values, starts)
        members = np.repeat(multi, sizes)
        sub_sizes = sizes[multi]
        sub_starts = np.concatenate(([0], np.cumsum(sub_sizes)[:-1]))
        put(out, multi, _fold(select(values, members), sub_starts, sub_sizes))
        return out
    return _fold(values, starts, sizes)


def combine_indexed(values: np.ndarray, order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``combine_groups(take(values, order), starts)`` with one gather of the records instead
    of two when most groups have one record (the common case in a merge). O(n)."""
    n = len(order)
    if n == 0:
        return np.empty(0, dtype=RECORD)
    if len(starts) == n:
        return take(values, order)
    sizes = np.diff(np.append(starts, n))
    multi = sizes > 1
    out = take(values, order[starts])
    members = order[np.repeat(multi, sizes)]
    sub_sizes = sizes[multi]
    sub_starts = np.concatenate(([0], np.cumsum(sub_sizes)[:-1]))
    put(out, multi, _fold(take(values, members), sub_starts, sub_sizes))
    return out


def _fold(values: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    n = len(values)
    out = np.empty(len(starts), dtype=RECORD)
    # Status winner: greatest (class, status_ms), ties to the later (newer) record.
    rank = (status_class(values["status"]) << _CLASS_SHIFT) | values["status_ms"]
    best = np.maximum.reduceat(rank, starts)
    index = np.arange(n, dtype=np.int64)
    winner = np.maximum.reduceat(np.where(rank == np.repeat(best, sizes), index, -1), starts)
    won = take(values, winner)
    for field in ("status", "status_ms", "http_status", "reason"):
        out[field] = won[field]
    min_next = np.minimum.reduceat(values["next_fetch_ms"], starts)
    out["next_fetch_ms"] = np.where(won["status"] >= 2, won["next_fetch_ms"], min_next)
    discovered = values["discovered_ms"]
    first = np.minimum.reduceat(np.where(discovered > 0, discovered, NEVER), starts)
    out["discovered_ms"] = np.where(first == NEVER, 0, first)
    out["leased_until_ms"] = np.maximum.reduceat(values["leased_until_ms"], starts)
    out["score"] = np.add.reduceat(values["score"], starts)
    out["host"] = np.maximum.reduceat(values["host"], starts)
    out["depth"] = np.minimum.reduceat(values["depth"], starts)
    for field in ("fetch_count", "failure_count"):
        total = np.add.reduceat(values[field].astype(np.int64), starts)
        out[field] = np.minimum(total, 0xFFFF)
    out["flags"] = np.bitwise_or.reduceat(values["flags"], starts)
    out["announced_s"] = np.maximum.reduceat(values["announced_s"], starts)
    out["shape"] = np.maximum.reduceat(values["shape"], starts)
    # Payload: the oldest record that has one.
    has = values["payload_len"] != 0
    holder = np.minimum.reduceat(np.where(has, index, n), starts)
    found = holder < n
    holders = take(values, np.where(found, holder, 0))
    for field in PAYLOAD_FIELDS:
        out[field] = np.where(found, holders[field], 0)
    # Recrawl fields: the newest set (greatest recrawl_s, ties to the later record).
    recrawl = values["recrawl_s"].astype(np.int64)
    newest = np.maximum.reduceat(recrawl, starts)
    if newest.any():
        keeper = np.maximum.reduceat(
            np.where(recrawl == np.repeat(newest, sizes), index, -1), starts
        )
    else:  # (the common case: discoveries only) each group's last record
        keeper = starts + sizes - 1
    # The recrawl fields are the record's second half: copied as one block.
    out.view(_HALVES)["recrawl"] = take(values, keeper).view(_HALVES)["recrawl"]
    hints = values["interval_s"].astype(np.int64)
    least_hint = np.minimum.reduceat(np.where(hints > 0, hints, 1 << 32), starts)
    no_holder = newest == 0
    out["interval_s"] = np.where(
        no_holder, np.where(least_hint == 1 << 32, 0, least_hint), out["interval_s"]
    )
    return out


def combine(older: np.ndarray, newer: np.ndarray) -> np.ndarray:
    """Merge ``newer[i]`` into ``older[i]`` for every i (same rule as :func:`combine_groups`)."""
    pairs = np.empty(2 * len(older), dtype=RECORD)
    raw = pairs.view(_RAW)
    raw[0::2] = older.view(_RAW)
    raw[1::2] = newer.view(_RAW)
    return combine_groups(pairs, np.arange(0, len(pairs), 2))


def record_dict(record: np.void | np.ndarray) -> dict[str, Any]:
    """One record as a plain dict of Python numbers (for tests, tools and logs)."""
    return {name: record[name].item() for name in RECORD.names}


def combine_one(older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    """The merge rule on two plain-dict records, one field at a time (the reference model that
    the vectorised rule is tested against; not used on the hot path)."""
    out = dict(older)

    def rank(r: dict[str, Any]) -> tuple[int, int]:
        return (min(r["status"], 2), r["status_ms"])

    winner = newer if rank(newer) >= rank(older) else older
    for field in ("status", "status_ms", "http_status", "reason"):
        out[field] = winner[field]
    if winner["status"] >= 2:
        out["next_fetch_ms"] = winner["next_fetch_ms"]
    else:
        out["next_fetch_ms"] = min(older["next_fetch_ms"], newer["next_fetch_ms"])
    known = [r["discovered_ms"] for r in (older, newer) if r["discovered_ms"] > 0]
    out["discovered_ms"] = min(known) if known else 0
    out["leased_until_ms"] = max(older["leased_until_ms"], newer["leased_until_ms"])
    out["score"] = float(np.float32(older["score"]) + np.float32(newer["score"]))
    out["host"] = max(older["host"], newer["host"])
    out["depth"] = min(older["depth"], newer["depth"])
    for field in ("fetch_count", "failure_count"):
        out[field] = min(older[field] + newer[field], 0xFFFF)
    out["flags"] = older["flags"] | newer["flags"]
    out["announced_s"] = max(older["announced_s"], newer["announced_s"])
    out["shape"] = max(older["shape"], newer["shape"])
    source = older if older["payload_len"] else newer
    for field in PAYLOAD_FIELDS:
        out[field] = source[field]
    holder = newer if newer["recrawl_s"] >= older["recrawl_s"] else older
    for field in RECRAWL_FIELDS:
        out[field] = holder[field]
    if not holder["recrawl_s"]:
        hints = [r["interval_s"] for r in (older, newer) if r["interval_s"]]
        out["interval_s"] = min(hints) if hints else 0
    return out
