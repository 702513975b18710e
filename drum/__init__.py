"""DRUM: the disk-backed URL-seen test and crawl DB (IRLBot's Disk Repository with Update
Management, with flink-crawler's due selection and archiving), in plain Python and NumPy.

A :class:`Drum` maps a 64-bit key (:func:`url_key`) to a 136-byte record (:data:`RECORD`), the
URL itself stored apart, once, in an append-only payload log. Operations (:meth:`Drum.check`,
:meth:`Drum.update`, :meth:`Drum.check_update`) go into a buffer; a merge sorts it, passes once
over the sorted, immutable runs on disk and answers the whole batch in one :class:`MergeResult`:
the checks (seen or not, in operation order), the new keys with their URLs, and the URLs due for
fetching when a selection was asked for. Time is an argument (``now_ms``) of every call that
may merge.

A DRUM's state is plain values, so that it can live in Flink's keyed state:
:meth:`Drum.manifest_bytes` (which files, with their sizes and checksums, and the counters),
:meth:`Drum.take_journal` (the operations not merged yet) and a :class:`ManifestHistory` (the
files dropped by recent merges). :meth:`Drum.restore` gives back exactly the DRUM they describe
or raises :class:`DrumMissingFileError` or :class:`DrumCorruptError` naming the file. Files are
never modified; only :meth:`Drum.collect_garbage` deletes them, those no retained manifest
names.

Costs are in :mod:`drum.store`, the record layout and the merge rule in :mod:`drum.record`.
README.md ("How it works", Crawl DB) and ARCHITECTURE.md ("State and checkpoints", decision 5)
say how the crawl DB uses one DRUM per partition; BENCHMARKS.md has the figures.
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
from drum.merge import PASS_LAPS
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
    "PASS_LAPS",
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
