"""DRUM: the disk-backed URL-seen test and crawl DB (IRLBot's Disk Repository with Update
Management, with flink-crawler's due selection and archiving). Plain Python and NumPy: no
Flink here, so it is tested and benchmarked alone (tests/unit/test_drum_*.py, bench/drum_*.py).

What it is
    A map from a 64-bit key (:func:`url_key`, BLAKE2b of the normalised URL) to a 136-byte record
    (:data:`RECORD`: status, score, times, counters, host hash, where the URL is, the recrawl
    state), with the URL itself (the payload) stored apart, once, in the DRUM's payload log
    (append-only, in immutable files: each merge writes the payloads of the keys it inserted as
    one file, and files are packed into larger ones as they accumulate, so there are few).
    Operations (:meth:`Drum.check`, :meth:`Drum.update`, :meth:`Drum.check_update`) go into a
    buffer; a merge sorts the buffer and passes once over the sorted runs on disk, and delivers
    every answer of the batch in one :class:`MergeResult`: the checks (seen or not, in
    operation order), the new keys with their URLs, and after a major merge the URLs due for
    fetching.
    Modules: :mod:`drum.record` (keys, record layout, merge rule), :mod:`drum.files` (file
    formats), :mod:`drum.manifest` (manifest, garbage collection), :mod:`drum.config` (sizes
    and policies), :mod:`drum.journal` (operations and their journal), :mod:`drum.results`
    (what a merge delivers), :mod:`drum.store` (the :class:`Drum`), :mod:`drum.merge` (one
    merge), :mod:`drum.fold` (runs folded in key order), :mod:`drum.selection` (the due
    selection), :mod:`drum.due_window` (due selections without a pass over the runs).

Merge rule (:func:`combine`; flink-crawler's DefaultUrlStateMerger)
    unfetched + unfetched sums the scores and keeps the earliest next fetch; otherwise the
    newest status wins (a fetch outcome beats a discovery); counters add up; a late outcome is
    counted but does not replace a newer one. The rule is associative, so a batch is folded
    before it is applied, and deltas are folded into the main run later, with the same result.

Costs (details in :mod:`drum.store`; figures in BENCHMARKS.md)
    per operation, amortised: O(1) in memory; a minor merge of B operations reads the K x 8
    key bytes of the runs (O(K / B) bytes per operation) and writes one delta record per
    updated key; a major merge rewrites the K records when the deltas reach
    ``major_ratio`` x K (O(144 / major_ratio) bytes per update: key and record). Memory is
    set by the buffer (``DrumConfig.buffer_ops``) and the block size, never by K.

One DRUM per key of the job's keyed crawl DB operator (a partition of vnodes; the reasons)
    The job (crawl/crawldb/partition.py) keeps one :class:`Drum` per crawl DB partition, a group of
    vnodes, in a directory of its own (``<output>/crawldb/partition-NNNNN``):

    1. PyFlink gives Python functions keyed state only (no operator state, no snapshot or
       checkpoint-complete hook), and a handler can read and write the state of the current
       key only. The manifest and the journal must be updated in the same call as the merge
       that changes them, so a DRUM belongs to one key; one DRUM per subtask is not possible.
    2. Rescaling moves key groups, hence whole keys, between subtasks. A DRUM moves with its
       key: its manifest and journal are in that key's state and its files are immutable, on
       storage every subtask reaches (a shared filesystem on a cluster), so the new owner
       restores it as it was.
    3. The cost per operation depends on keys / buffer; what grows with the number of DRUMs
       is the fixed cost per merge (a few files, fsyncs and a manifest). Every buffer must be
       merged within a flush interval so that new URLs move on, so the job uses a few dozen
       partitions rather than one DRUM per vnode (256 vnodes would mean hundreds of small
       merges a second).
    4. Memory: a subtask holds P/p partitions (P partitions, parallelism p), each with a
       buffer of ``buffer_ops`` operations.

Hooks for the job (checkpoint consistency without a snapshot hook)
    * Files are immutable once written, under names never used before (a random part, also
      after a restore of an older manifest); a merge writes new files, then a new manifest;
      it never modifies or deletes a file (:func:`collect_garbage` is the only deleter).
    * State per DRUM, all plain values: (1) ValueState ``drum_manifest``:
      :meth:`Drum.manifest_bytes` (JSON with a format version and a checksum, checked
      when read back, a few hundred bytes plus about 90 bytes per file), written whenever
      :attr:`Drum.state_version` changed;
      (2) ListState ``drum_journal``: the operations not merged yet, as chunks from
      :meth:`Drum.take_journal` after each call (``reset`` means "replace the list"; the
      crawl DB keeps its own journal of loop records instead, and hands the DRUM whole
      batches);
      (3) ValueState ``drum_history``: a :class:`ManifestHistory` (JSON): the files
      dropped by recent merges.
    * Restore: ``Drum.restore(directory, manifest_state.value(), journal_state.get(), config)``
      gives back exactly the DRUM of the checkpoint (same files, same counters, same buffered
      operations with the same sequence numbers); it checks that every file exists with its
      recorded size and checksum and raises :class:`DrumMissingFileError` or
      :class:`DrumCorruptError` naming the file otherwise. Where the DRUM also writes its
      manifests as files (``DrumConfig.write_manifest_files``, standalone use), a restore
      makes its manifest the newest file, so that :meth:`Drum.open` loads it and not a later,
      abandoned one.
    * Garbage: after each merge, ``history.replaced(old_manifest, new_manifest, now)`` then
      ``drum.collect_garbage(keep=history.retained(now))`` deletes the files that neither the
      current manifest nor any manifest current during the retention window refers to
      (:func:`referenced_files` lists a manifest's files). The window must cover the retained
      checkpoints (see :class:`ManifestHistory`).
    * Results: each operation method returns the :class:`MergeResult` of every merge it
      triggered (usually none), so the handler emits them in the same call: ``result.new``
      (keys, URLs, records: depth and host for the frontier) and ``result.due`` (URLs to
      fetch again, best score first, at most ``DuePolicy.per_host`` per host, leased for
      ``DuePolicy.lease_ms`` so they are not handed out twice). New keys can be leased too
      (``DrumConfig.new_url_lease_ms``) when the job sends them to the frontier at once.
      ``result.seq_end`` tells which operations the merge answered.
    * Time is an argument (``now_ms``) of every call that may merge: deterministic tests.
"""

from drum.config import ArchivePolicy, DrumConfig, DuePolicy
from drum.errors import (
    DrumCorruptError,
    DrumError,
    DrumManifestError,
    DrumMissingFileError,
    DrumWriteError,
)
from drum.files import FileInfo, checksum
from drum.journal import CHECK, CHECK_UPDATE, UPDATE, JournalChunk
from drum.manifest import (
    Counters,
    Manifest,
    ManifestHistory,
    collect_garbage,
    referenced_files,
)
from drum.record import (
    LAYOUT_VERSION,
    NEVER,
    NO_DEPTH,
    RECORD,
    RECRAWL_FIELDS,
    DrumStatus,
    ReasonTable,
    announced,
    combine,
    combine_groups,
    combine_one,
    discoveries,
    host_key,
    neutral,
    outcomes,
    record_dict,
    url_key,
    url_keys,
)
from drum.results import Checks, DueSelection, MergeResult, NewKeys
from drum.selection import ReleaseLimits
from drum.store import Drum

__all__ = [
    "CHECK",
    "CHECK_UPDATE",
    "LAYOUT_VERSION",
    "NEVER",
    "NO_DEPTH",
    "RECORD",
    "RECRAWL_FIELDS",
    "UPDATE",
    "ArchivePolicy",
    "Checks",
    "Counters",
    "Drum",
    "DrumConfig",
    "DrumCorruptError",
    "DrumError",
    "DrumManifestError",
    "DrumMissingFileError",
    "DrumStatus",
    "DrumWriteError",
    "DueSelection",
    "DuePolicy",
    "FileInfo",
    "JournalChunk",
    "Manifest",
    "ManifestHistory",
    "MergeResult",
    "NewKeys",
    "ReasonTable",
    "ReleaseLimits",
    "announced",
    "checksum",
    "collect_garbage",
    "combine",
    "combine_groups",
    "combine_one",
    "discoveries",
    "host_key",
    "neutral",
    "outcomes",
    "record_dict",
    "referenced_files",
    "url_key",
    "url_keys",
]
