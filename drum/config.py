"""The DRUM's configuration: sizes, and the policies of its due selection and archiving.

Plain frozen values, checked when built (:class:`DrumConfig` raises :class:`ValueError` on a
size out of range); a :class:`~drum.store.Drum` reads them and never changes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ArchivePolicy", "DrumConfig", "DuePolicy"]


@dataclass(frozen=True)
class DuePolicy:
    """Which URLs a major merge hands out for fetching."""

    #: At most this many per major merge (0: select nothing).
    max_urls: int = 100_000
    #: At most this many per host (by the record's host hash; 0: no limit; host 0 unlimited).
    per_host: int = 100
    #: Only URLs with at least this score.
    min_score: float = float("-inf")
    #: A selected URL is leased this long: not selected again before (0: no lease).
    lease_ms: int = 3_600_000
    #: Mark each selected URL QUEUED (at the merge's time) instead of leasing it: it is not
    #: due again until an outcome replaces that status, and ``per_host`` then bounds the URLs
    #: of a host that are QUEUED at once (those already queued count), not those of one merge.
    mark_queued: bool = False
    #: Rank = score - depth_weight x depth (hops from a seed; 0: by score alone).
    depth_weight: float = 0.0
    #: Above 0: new URLs (UNFETCHED) and revisits (a fetch outcome due again) are selected
    #: apart, revisits getting at most this share of ``max_urls`` while new URLs are due and
    #: new URLs the rest while revisits are due (a kind short of its share leaves it to the
    #: other); a revisit's rank adds how late it is, in intervals (``interval_s``). 0: both
    #: kinds ranked together.
    refresh_share: float = 0.0
    #: Above 0: keep a due window of at most this many records in memory
    #: (:mod:`drum.due_window`), from which selections are made without reading the runs while
    #: it lasts; a pass over the runs builds it again. 0: every selection passes over the runs.
    #: Not used with a ``min_score`` (a score that grows would move a record into it), nor
    #: with an :class:`ArchivePolicy` that gives up on records a selection could take (see
    #: :attr:`DrumConfig.windowed`).
    window_urls: int = 0


@dataclass(frozen=True)
class ArchivePolicy:
    """Which records a major merge moves to an archived set (leased records never move)."""

    #: UNFETCHED records with a score below this (None: off).
    min_score: float | None = None
    #: Failed records with at least this many failures (0: off).
    max_failures: int = 0
    #: Per host, UNFETCHED records beyond this many records of the host, in key order, which
    #: is a pseudo-random order within a host (0: off; host 0 has no budget).
    host_max_urls: int = 0
    #: Outcomes never due again (next fetch NEVER).
    archive_done: bool = False


@dataclass(frozen=True)
class DrumConfig:
    """Sizes and policies. Memory is about ``buffer_ops`` x 170 bytes (keys, values, payload
    references) plus the payload bytes, plus a few blocks of ``block_records`` x 136 bytes per
    run during merges, whatever the number of keys."""

    buffer_ops: int = 1 << 20
    buffer_payload_bytes: int = 256 << 20
    block_records: int = 1 << 16
    #: A major merge runs when there are this many delta runs...
    max_deltas: int = 16
    #: ...or when the delta records exceed this fraction of the main run's (or of buffer_ops).
    major_ratio: float = 1.0
    #: Below that, the newest ``delta_fanout`` delta runs are folded into one when they are of
    #: one size class (powers of the fanout times ``delta_base_records``): size-tiered, so
    #: frequent small merges keep few runs without rewriting the main run. A record is copied
    #: once a class: a larger fanout copies less and leaves more runs (up to fanout - 1 a class,
    #: which ``max_deltas`` must leave room for); 8 wrote 16 % fewer bytes an operation than 4
    #: at 30 M keys (BENCHMARKS.md, "The DRUM: fewer lookups, delta runs folded eight at a
    #: time").
    delta_fanout: int = 8
    delta_base_records: int = 4096
    #: Archived sets are compacted into one when there are more than this many.
    max_archives: int = 8
    #: Payload files are packed this many at a time, when they are of one size class...
    payload_pack_fanout: int = 8
    #: ...size classes being powers of the fanout times this many bytes.
    payload_pack_base_bytes: int = 64 << 10
    #: New keys are leased this long (the job sends them to the frontier at once; 0: no lease).
    new_url_lease_ms: int = 0
    due: DuePolicy = field(default_factory=DuePolicy)
    archive: ArchivePolicy = field(default_factory=ArchivePolicy)
    #: fsync every file before the manifest that names it (needed for checkpoints).
    fsync: bool = True
    #: Write each new manifest as a file too, so :meth:`Drum.open` can reopen the directory.
    write_manifest_files: bool = True

    @property
    def windowed(self) -> bool:
        """Whether selections use a due window: asked for, and the window can be kept exact
        without a pass (no ``min_score``; the archive policy gives up on nothing but records
        never due again, as a pass passes over the records it would archive: a failure count,
        a score or a host's rank among its records can change without a merge reading them)."""
        due, archive = self.due, self.archive
        return (
            due.max_urls > 0 and due.window_urls > 0 and due.min_score == float("-inf")
            and archive.min_score is None and archive.max_failures == 0
            and archive.host_max_urls == 0
        )

    def __post_init__(self) -> None:
        if self.buffer_ops < 1 or self.block_records < 1 or self.max_deltas < 1:
            raise ValueError("buffer_ops, block_records and max_deltas must be >= 1")
        if not 0 < self.major_ratio or self.max_archives < 1:
            raise ValueError("major_ratio must be > 0 and max_archives >= 1")
        if self.delta_fanout < 2 or self.delta_base_records < 1:
            raise ValueError("delta_fanout must be >= 2 and delta_base_records >= 1")
        if self.payload_pack_fanout < 2 or self.payload_pack_base_bytes < 1:
            raise ValueError("payload_pack_fanout must be >= 2 and payload_pack_base_bytes >= 1")

