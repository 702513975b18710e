"""The crawl DB of one partition: the URL-seen test and every URL's record, in a DRUM.

The crawl DB is split into ``crawldb.partitions`` partitions: a URL's partition is its vnode
modulo the partition count, so a host's URLs share a partition. Each partition is one
:class:`drum.Drum` in a directory of its own (``<output>/crawldb/partition-NNNNN``), driven by
the crawl DB operator keyed by partition (``operators/crawl_db.py``), which only moves values
between Flink and this class.

Why partitions, not one DRUM per vnode: a merge costs a mostly fixed amount (two files written
and fsynced, a manifest and a journal reset in keyed state), and each buffer must be merged
within ``crawldb.flush_seconds`` so that new URLs reach the frontier soon. With one DRUM per
vnode (256 by default) an active crawl would run hundreds of tiny merges a second in the one
interpreter of the job; 16 partitions run a few dozen. The partition count is fixed for the
life of a crawl, like the vnode count, and bounds the crawl DB's parallelism.

Operations, in the order the loop delivers them:

* a **found** URL (a link, a seed, a redirect target): ``check_update`` with an UNFETCHED
  record (depth = its hops). The merge that answers it says whether the URL was new; a new URL
  goes to the frontier, once (invariant 2 of the design: nothing is fetched twice);
* a **done** event (a fetch outcome): ``update`` with the outcome (status, HTTP status,
  reason, time); attempts and failures are counted, the newest outcome wins.

Answers come in bulk, when a merge runs: when the buffer is full, or at the latest
``flush_seconds`` after the buffer's first operation (the operator's timer calls
:meth:`CrawlDbPartition.flush`).

The payload stored with a URL's key is ``url \\n hops \\n via`` (the discovery path and the
referring URL), so the frontier gets what the crawl log needs from the DRUM's answer alone.

Policies for now: no due selection (the frontier keeps every URL it was given, in its keyed
state; revisits come with the continuous crawl); a major merge moves URLs done for good (an
outcome, never due again) to archived sets, where they stay "seen".

Checkpoint consistency (``../DESIGN.md``): after every call the operator stores
:meth:`CrawlDbPartition.take_state` in keyed state: the manifest (which immutable files make
the DRUM), the journal (operations not merged yet) and the history of dropped files (for
garbage collection). Restoring from any retained checkpoint's values gives back exactly the
DRUM of that checkpoint; files are deleted only when no retained checkpoint can refer to them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from crawl.config import CrawlDbSection
from crawl.urls import host_of
from drum import (
    CHECK_UPDATE,
    NO_DEPTH,
    ArchivePolicy,
    Drum,
    DrumConfig,
    DrumStatus,
    DuePolicy,
    JournalChunk,
    ManifestHistory,
    MergeResult,
    discoveries,
    host_key,
    outcomes,
    url_keys,
)
from drum.manifest import collect_garbage

__all__ = [
    "MAX_VIA_BYTES",
    "Answer",
    "CrawlDbPartition",
    "PartitionState",
    "decode_payload",
    "drum_config",
    "encode_payload",
    "partition_directory",
    "partition_of",
]

#: A referring URL longer than this is cut in the stored payload (it is only for the log).
MAX_VIA_BYTES = 4096


def partition_of(vnode: int, partitions: int) -> int:
    """The crawl DB partition of a vnode."""
    return vnode % partitions


def partition_directory(root: str, partition: int) -> str:
    """The directory of a partition's DRUM under the crawl DB directory."""
    return os.path.join(root, f"partition-{partition:05d}")


def drum_config(section: CrawlDbSection) -> DrumConfig:
    """The DRUM configuration of a crawl DB partition."""
    return DrumConfig(
        buffer_ops=section.buffer_ops,
        buffer_payload_bytes=section.buffer_payload_bytes,
        block_records=section.block_records,
        max_deltas=section.max_deltas,
        max_archives=section.max_archives,
        due=DuePolicy(max_urls=0),
        archive=ArchivePolicy(archive_done=True),
        fsync=section.fsync,
        # The manifest lives in keyed state; a file per merge would only cost an fsync.
        write_manifest_files=False,
    )


def encode_payload(url: str, hops: str, via: str) -> bytes:
    """The DRUM payload of a URL: ``url \\n hops \\n via`` in UTF-8 (via cut if huge)."""
    via_bytes = via.encode("utf-8", "replace")[:MAX_VIA_BYTES]
    return b"\n".join((url.encode("utf-8", "replace"), hops.encode("utf-8", "replace"), via_bytes))


def decode_payload(payload: bytes) -> tuple[str, str, str]:
    """Inverse of :func:`encode_payload` (a payload without newlines is a bare URL)."""
    parts = payload.decode("utf-8", "replace").split("\n", 2)
    parts += [""] * (3 - len(parts))
    return parts[0], parts[1], parts[2]


@dataclass
class Answer:
    """What one call delivers: fetch requests for the frontier and counts for the figures."""

    #: ``(host, JSON list of [url, hops, via])``: URLs seen for the first time, per host.
    requests: list[tuple[str, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, name: str, amount: int = 1) -> None:
        if amount:
            self.counts[name] = self.counts.get(name, 0) + amount


@dataclass(frozen=True)
class PartitionState:
    """What the operator writes to keyed state after a call (None: unchanged)."""

    manifest: bytes | None
    journal: JournalChunk
    history: str | None


class CrawlDbPartition:
    """One partition of the crawl DB (see the module docstring).

    Build it with the values of the partition's keyed state (all None for a partition never
    seen): ``manifest`` bytes, ``journal`` chunks, ``history`` JSON. ``window_ms`` is how long
    dropped files are kept for retained checkpoints (``crawldb.file_grace_seconds``).
    """

    def __init__(
        self,
        directory: str,
        section: CrawlDbSection,
        *,
        manifest: bytes | None = None,
        journal: Iterable[bytes] = (),
        history: str | None = None,
    ) -> None:
        self.directory = directory
        config = drum_config(section)
        window_ms = int(section.file_grace_seconds * 1000)
        if manifest is None:
            # A partition with no state: whatever is in its directory was written after the
            # checkpoint being restored (or by an earlier crawl) and no checkpoint refers to it.
            collect_garbage(directory, [])
            self._drum = Drum.create(directory, config)
        else:
            self._drum = Drum.restore(directory, manifest, journal, config)
        self._history = (
            ManifestHistory.from_json(json.loads(history))
            if history
            else ManifestHistory(window_ms)
        )
        self._history.window_ms = window_ms
        self._manifest = self._drum.manifest_bytes()
        self._stored_version = self._drum.state_version if manifest is not None else -1
        self._history_changed = False

    # ------------------------------------------------------------------ figures

    @property
    def buffered(self) -> int:
        """Operations waiting for a merge."""
        return self._drum.buffered

    @property
    def known(self) -> int:
        """Distinct URLs known after the last merge (live and archived)."""
        return len(self._drum)

    @property
    def drum(self) -> Drum:
        return self._drum

    # ------------------------------------------------------------------ operations

    def apply(
        self,
        found: Sequence[tuple[str, str, str]],
        done: Sequence[tuple[str, str, int, str, int]],
        now_ms: int,
    ) -> Answer:
        """Buffer found URLs and done events; deliver the answers of any merge this caused."""
        answer = Answer()
        results: list[MergeResult] = []
        if done:
            results += self._outcomes(done, now_ms, answer)
        if found:
            urls = [url for url, _, _ in found]
            depth = np.fromiter(
                (min(len(hops), NO_DEPTH - 1) for _, hops, _ in found), np.int64, len(found)
            )
            hosts = np.fromiter((host_key(host_of(url)) for url in urls), np.uint32, len(found))
            values = discoveries(len(found), now_ms=now_ms, depth=depth, host=hosts)
            payloads = [encode_payload(url, hops, via) for url, hops, via in found]
            results += self._drum.check_update(url_keys(urls), values, payloads, now_ms=now_ms)
            answer.count("urls.found", len(found))
        self._deliver(results, now_ms, answer)
        return answer

    def flush(self, now_ms: int) -> Answer:
        """Merge the buffer now (the flush timer); nothing happens when it is empty."""
        answer = Answer()
        if self._drum.buffered:
            self._deliver([self._drum.merge(now_ms=now_ms)], now_ms, answer)
        return answer

    def take_state(self) -> PartitionState:
        """The keyed-state changes since the previous call."""
        version = self._drum.state_version
        manifest = None
        if version != self._stored_version:
            manifest = self._drum.manifest_bytes()
            self._stored_version = version
        history = None
        if self._history_changed:
            history = json.dumps(self._history.to_json(), separators=(",", ":"))
            self._history_changed = False
        return PartitionState(manifest, self._drum.take_journal(), history)

    def close(self) -> None:
        self._drum.close()

    # ------------------------------------------------------------------ internals

    def _outcomes(
        self, done: Sequence[tuple[str, str, int, str, int]], now_ms: int, answer: Answer
    ) -> list[MergeResult]:
        kept = []
        for event in done:
            if event[1] in DrumStatus.__members__ and event[1] not in ("NONE", "UNFETCHED"):
                kept.append(event)
            else:
                answer.count("done.bad_status")
        if not kept:
            return []
        n = len(kept)
        urls = [url for url, _, _, _, _ in kept]
        status = np.fromiter((DrumStatus[s] for _, s, _, _, _ in kept), np.uint8, n)
        http = np.fromiter((min(max(c, 0), 0xFFFF) for _, _, c, _, _ in kept), np.int64, n)
        reasons = np.fromiter((self._reason_code(r) for _, _, _, r, _ in kept), np.int64, n)
        at = np.fromiter((t for _, _, _, _, t in kept), np.int64, n)
        hosts = np.fromiter((host_key(host_of(url)) for url in urls), np.uint32, n)
        values = outcomes(n, status=status, at_ms=at, http_status=http, reason=reasons, host=hosts)
        payloads = [encode_payload(url, "", "") for url in urls]
        for _, name, _, _, _ in kept:
            answer.count(f"done.{name}")
        return self._drum.update(url_keys(urls), values, payloads, now_ms=now_ms)

    def _reason_code(self, reason: str) -> int:
        try:
            return self._drum.reason_code(reason[:100])
        except ValueError:  # the table is full: an unbounded vocabulary of reasons
            return self._drum.reason_code("other")

    def _deliver(self, results: list[MergeResult], now_ms: int, answer: Answer) -> None:
        if not results:
            return
        batches: dict[str, list[list[str]]] = {}
        for result in results:
            answer.count("merges")
            answer.count("merges.major", int(result.major))
            answer.count("urls.archived", result.archived)
            answer.count("archives.compacted", int(result.compacted))
            answer.count("updates.on_archived", result.dropped_updates)
            answer.count("urls.duplicate", result.duplicates)
            new = result.new
            for kind, payload in zip(new.kinds.tolist(), new.payloads, strict=True):
                if kind != CHECK_UPDATE:
                    answer.count("done.unknown_url")  # an outcome for a URL never found
                    continue
                url, hops, via = decode_payload(payload)
                batches.setdefault(host_of(url), []).append([url, hops, via])
                answer.count("urls.new")
        answer.requests = [
            (host, json.dumps(items, separators=(",", ":"))) for host, items in batches.items()
        ]
        # Garbage: the files the merges dropped stay while a retained checkpoint may need them.
        manifest = self._drum.manifest_bytes()
        self._history.replaced(self._manifest, manifest, now_ms)
        self._manifest = manifest
        deleted = self._drum.collect_garbage(keep=self._history.retained(now_ms))
        answer.count("files.deleted", len(deleted))
        self._history_changed = True
