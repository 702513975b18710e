"""What of a response body is kept: its Content-Encoding removed within the crawl's limits, and
which content types are downloaded at all.

The crawler decodes gzip and deflate itself rather than leaving it to aiohttp, so that both
the encoded and the decoded size are known: the decoded body is cut at a size limit, and a
body that decodes to far more than it weighed compressed (a bomb) is refused with nothing
kept: a bomb's content is worthless, and a truncated one would look like a real page. zlib-ng
inflates (twice as fast as zlib here on a gzipped page of 50 KB).
"""

from __future__ import annotations

from typing import Any

from zlib_ng import zlib_ng

__all__ = ["RATIO_FLOOR_BYTES", "BodyDecoder", "BodyError", "content_type_accepted"]

#: The decompression ratio is checked once this much has been decoded: small bodies of repeated
#: text compress very well and cost nothing.
RATIO_FLOOR_BYTES = 1024 * 1024


class BodyError(Exception):
    """A body that cannot be kept; ``reason`` is the crawl's reason for it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_GZIP_MAGIC = b"\x1f\x8b"
#: Decoded bytes produced per step: the ratio is checked between steps.
_INFLATE_STEP = 256 * 1024
_CODINGS = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}


class BodyDecoder:
    """Removes a response's Content-Encoding as the body arrives, within the crawl's limits.

    Plain logic: :meth:`feed` the encoded bytes as they come, :meth:`finish` at their end;
    :attr:`body` is the decoded body, at most ``max_bytes`` long, and :attr:`truncated` says
    whether more was there. Output is produced in steps of at most 256 KiB and never more than
    one byte past ``max_bytes``, so a bomb never takes more memory than a large page. Raises
    :class:`BodyError` for an unsupported coding, corrupt or unfinished compressed data, or a
    decoded body more than ``max_ratio`` times the compressed bytes it came from (0: no limit;
    checked once ``ratio_floor`` bytes are decoded). gzip may hold several members; bytes
    after the end of the compressed data are ignored. ``deflate`` is zlib-wrapped or, as some
    servers send it, raw.
    """

    def __init__(
        self,
        content_encoding: str,
        max_bytes: int,
        max_ratio: float = 0.0,
        ratio_floor: int = RATIO_FLOOR_BYTES,
    ) -> None:
        codings = [
            coding.strip().lower()
            for coding in content_encoding.split(",")
            if coding.strip() and coding.strip().lower() != "identity"
        ]
        if len(codings) > 1 or (codings and codings[0] not in _CODINGS):
            raise BodyError("bad-response:unsupported-encoding")
        self.coding = _CODINGS[codings[0]] if codings else ""
        self.body = bytearray()
        self.truncated = False
        #: Encoded bytes consumed so far.
        self.encoded = 0
        #: Decoded bytes produced so far (at most one past the limit).
        self.decoded = 0
        self._max_bytes = max_bytes
        self._max_ratio = max_ratio
        self._ratio_floor = ratio_floor
        self._inflater: Any = None
        self._members = 0  # compressed streams (gzip members) finished
        self._ended = False  # the compressed data ended: the rest is ignored

    def feed(self, data: bytes) -> bool:
        """Take the next encoded bytes; True once the body is cut at the size limit (the caller
        stops reading)."""
        if self.truncated or self._ended or not data:
            return self.truncated
        if not self.coding:
            self.encoded += len(data)
            self._append(data)
            return self.truncated
        pending = data
        while pending and not self.truncated:
            if self._inflater is None:
                if self._members and not _GZIP_MAGIC.startswith(pending[:2]):
                    self._ended = True  # bytes after the last member: ignored
                    break
                self._inflater = self._new_inflater(pending)
            inflater = self._inflater
            try:
                room = self._max_bytes - len(self.body)
                out = inflater.decompress(pending, min(room + 1, _INFLATE_STEP))
            except zlib_ng.error:
                raise BodyError(f"bad-response:invalid-{self.coding}") from None
            consumed = len(pending) - len(inflater.unconsumed_tail)
            if inflater.eof:
                consumed -= len(inflater.unused_data)
            self.encoded += consumed
            self._append(out)
            self._check_ratio()
            if inflater.eof:
                self._members += 1
                self._inflater = None
                pending = inflater.unused_data
                if self.coding != "gzip":
                    self._ended = True
                    break
            else:
                pending = inflater.unconsumed_tail
        return self.truncated

    def finish(self) -> None:
        """The encoded body has ended: raise if compressed data stopped in the middle."""
        if not self.truncated and self._inflater is not None:
            raise BodyError(f"bad-response:incomplete-{self.coding}")

    def _new_inflater(self, first: bytes) -> Any:
        if self.coding == "gzip":
            return zlib_ng.decompressobj(16 + zlib_ng.MAX_WBITS)
        # RFC 1950: the low nibble of a zlib stream's first byte is 8 (deflate); else raw.
        return zlib_ng.decompressobj(
            zlib_ng.MAX_WBITS if first[0] & 0x0F == 8 else -zlib_ng.MAX_WBITS)

    def _append(self, out: bytes) -> None:
        self.decoded += len(out)
        room = self._max_bytes - len(self.body)
        if len(out) > room:
            self.body += out[:room]
            self.truncated = True
        else:
            self.body += out

    def _check_ratio(self) -> None:
        if (
            self._max_ratio
            and self.decoded >= self._ratio_floor
            and self.decoded > self._max_ratio * max(1, self.encoded)
        ):
            raise BodyError("bad-response:compression-ratio")


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def content_type_accepted(content_type: str, accepted: tuple[str, ...]) -> bool:
    """Whether a response with Content-Type ``content_type`` is downloaded.

    ``accepted`` holds media types (``text/html``) and ranges (``text/*``, ``*/*``); empty
    accepts everything. A response without a media type is accepted: nothing says it is of a
    filtered type (sniffing its bytes is not this rule's business).
    """
    if not accepted:
        return True
    media = _media_type(content_type)
    if not media:
        return True
    major = media.split("/", 1)[0]
    for entry in accepted:
        entry = entry.lower()
        if entry in (media, "*/*") or (entry.endswith("/*") and entry[:-2] == major):
            return True
    return False
