"""The DRUM store: a buffer of operations merged in bulk with sorted, immutable runs on disk.

On disk, every file listed by the :class:`~drum.manifest.Manifest`: the **main run** (every
live key with its record, sorted by key); **delta runs** (a minor merge's updates, one record
per key, folded together size-tiered, ``delta_fanout`` at a time); **archived sets** (keys
that will probably never be fetched again, still "seen"); the **payload log** (the URLs, in
files packed size-tiered; a record holds its URL's position in the log, which packing never
changes). The buffer is in memory, bounded by ``DrumConfig.buffer_ops`` and
``buffer_payload_bytes``.

Costs, for K keys on disk and B buffered operations:

* a **minor merge** (buffer full, or :meth:`Drum.merge`) reads only the key blocks that may
  hold a buffered key (at most K x 8 bytes; a key found in the main run is not searched for in
  the delta runs or archived sets) and writes O(B x 144 + new URL bytes) (144 bytes a key and
  record at most: a block of records that leave most fields zero takes less, see
  :mod:`drum.files`);
* a **major merge** (many deltas, or more than ``major_ratio`` x K delta records) reads and
  rewrites K x 144 bytes (key and record) with a few blocks per run in memory, archives what the
  :class:`ArchivePolicy` gives up on and, when asked, makes a due selection (:class:`DuePolicy`)
  whose URLs it leases: amortised O(144 / major_ratio) bytes per operation, whatever K;
* a **due selection** without a major merge is a read-only pass over the folded runs, or reads
  nothing while the due window (:mod:`drum.due_window`) lasts.

This module holds the :class:`Drum` (its buffer, operations, state for the job, reading and
invariants); a merge's work is done by :class:`drum.merge.MergeState`, the selection by
:mod:`drum.selection`. BENCHMARKS.md has the measured figures.
"""

from __future__ import annotations

import bisect
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from drum.config import DrumConfig
from drum.due_window import DueWindow
from drum.errors import DrumCorruptError, DrumManifestError
from drum.files import (
    KIND_ARCHIVE,
    KIND_DELTA,
    KIND_MAIN,
    FileInfo,
    ManifestWriter,
    Opener,
    PayloadFile,
    RunFile,
    default_opener,
)
from drum.fold import merged_chunks
from drum.journal import CHECK, CHECK_UPDATE, UPDATE, JournalChunk, decode_ops, encode_ops
from drum.manifest import (
    Counters,
    Manifest,
    collect_garbage,
    drum_file_names,
    manifest_serials,
)
from drum.merge import MergeState
from drum.record import RECORD, ReasonTable, concat, neutral, put, select
from drum.results import MergeResult
from drum.selection import ReleaseLimits

__all__ = ["Drum"]

_EMPTY_KEYS = np.empty(0, dtype=np.uint64)


class Drum:
    """A DRUM in one directory. Build it with :meth:`create`, :meth:`open` or :meth:`restore`.

    Operations are buffered and answered in bulk: each operation method returns the
    :class:`MergeResult` of every merge it triggered (usually none). Operation ``i`` of a
    DRUM's life has sequence number ``i``; ``next_seq`` is the number of the next one.
    Not thread-safe: one DRUM is used by one thread.
    """

    def __init__(
        self,
        directory: str,
        manifest: Manifest,
        config: DrumConfig,
        opener: Opener | None,
        *,
        verify: bool = False,
    ) -> None:
        self.directory = os.fspath(directory)
        self.config = config
        self._opener = opener or default_opener
        self._manifest = manifest
        self._reasons = ReasonTable(manifest.reasons)
        self._state_version = 0
        self._main: RunFile | None = None
        self._deltas: list[RunFile] = []
        self._archives: list[RunFile] = []
        self._payload_files: dict[str, PayloadFile] = {}  # open payload files, by name
        self._open_files(verify)
        cap = config.buffer_ops
        self._keys = np.empty(cap, dtype=np.uint64)
        self._kinds = np.empty(cap, dtype=np.uint8)
        self._values = np.empty(cap, dtype=RECORD)
        self._payloads: list[bytes] = []
        self._payload_bytes = 0
        self._fill = 0
        self._journal_from = 0
        self._journal_reset = False
        self._closed = False
        #: Seconds spent per merge phase (see also drum.files.IO_SECONDS): diagnostics, and
        #: what a release's pass over the runs took (:data:`drum.merge.PASS_LAPS`).
        self.timings: dict[str, float] = {}
        #: The clock of :attr:`timings` (a user may give its own: the crawl DB its thread's CPU
        #: time, a test one that stands still).
        self.clock: Callable[[], float] = time.perf_counter
        # The due window (None: none yet, or given up; never stored: built by a pass).
        self._window: DueWindow | None = None
        #: What the due window did (diagnostics, since this object was made): selections made
        #: from it, passes that built one, windows given up (by cause), keys looked up in the
        #: runs to keep one exact.
        self.window_stats: dict[str, int] = {}

    # ------------------------------------------------------------------ construction

    @classmethod
    def create(
        cls, directory: str, config: DrumConfig | None = None, *, opener: Opener | None = None
    ) -> Drum:
        """A new, empty DRUM in ``directory`` (created if needed; must hold no manifest).
        O(1) I/O."""
        os.makedirs(directory, exist_ok=True)
        if any(n.startswith("manifest-") for n in drum_file_names(directory)):
            raise DrumManifestError(directory, "already holds a DRUM (use Drum.open)")
        manifest = Manifest(token=os.urandom(4).hex())
        return cls(directory, manifest, config or DrumConfig(), opener)

    @classmethod
    def open(
        cls,
        directory: str,
        config: DrumConfig | None = None,
        *,
        opener: Opener | None = None,
        verify: bool = False,
    ) -> Drum:
        """Reopen the DRUM of ``directory`` from its newest manifest file, the one with the
        highest serial (standalone use; operations never merged are lost, as without a
        journal; a restore makes its manifest the newest). O(files) I/O."""
        serials = manifest_serials(directory)
        if not serials:
            raise DrumManifestError(directory, "no DRUM manifest in this directory")
        newest = max(serials, key=serials.__getitem__)
        path = os.path.join(directory, newest)
        with open(path, "rb") as handle:
            manifest = Manifest.from_bytes(handle.read(), path)
        return cls(directory, manifest, config or DrumConfig(), opener, verify=verify)

    @classmethod
    def restore(
        cls,
        directory: str,
        manifest: Manifest | Mapping[str, Any] | bytes,
        pending: Iterable[bytes] = (),
        config: DrumConfig | None = None,
        *,
        opener: Opener | None = None,
        verify: bool = False,
    ) -> Drum:
        """The DRUM described by ``manifest`` with the journal chunks ``pending`` back in its
        buffer: exactly the DRUM whose manifest and journal were stored (the job's restore).

        Checks that every file exists with the recorded size and checksum (O(files) I/O;
        with ``verify``, reads and checks every block and payload: O(total size)). Raises
        :class:`DrumMissingFileError` or :class:`DrumCorruptError` naming the file.

        With ``write_manifest_files``, the restored manifest becomes the one :meth:`open` loads:
        if a manifest file of a higher serial is in the directory (a later state, abandoned by
        this restore of an earlier one) or its own file is not, the manifest is written again
        under a serial above every one there (same files and counters, a new name; merges go
        on from it). The abandoned manifests and their files are left to
        :func:`collect_garbage`. One small file written, at most.
        """
        if isinstance(manifest, bytes | bytearray):
            manifest = Manifest.from_bytes(bytes(manifest))
        elif not isinstance(manifest, Manifest):
            manifest = Manifest.from_json(manifest)
        drum = cls(directory, manifest, config or DrumConfig(), opener, verify=verify)
        try:
            for index, chunk in enumerate(pending):
                kinds, keys, values, payloads = decode_ops(chunk, f"pending chunk {index}")
                drum._append_raw(kinds, keys, values, payloads)
            drum._journal_from = drum._fill
            if drum.config.write_manifest_files:
                drum._become_newest()
        except BaseException:
            drum.close()
            raise
        return drum

    def _become_newest(self) -> None:
        """Write the manifest again under a serial above every manifest file's of the
        directory, unless its own file is already the newest."""
        serials = manifest_serials(self.directory)
        manifest = self.manifest
        own = serials.pop(manifest.file_name, None)
        if own is not None and all(serial < own for serial in serials.values()):
            return
        serial = max([manifest.serial, *serials.values()]) + 1
        manifest = manifest.evolve(serial=serial, token=os.urandom(4).hex())
        path = self._path(manifest.file_name)
        ManifestWriter(path, self._opener, self.config.fsync).write(manifest.to_bytes())
        self._manifest = manifest
        self._state_version += 1

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def _open_files(self, verify: bool) -> None:
        m = self._manifest
        opened: list[RunFile | PayloadFile] = []
        try:
            if m.main:
                self._main = RunFile(self._path(m.main.name), m.main)
                opened.append(self._main)
            for info in m.deltas:
                self._deltas.append(RunFile(self._path(info.name), info))
                opened.append(self._deltas[-1])
            for info in m.archives:
                self._archives.append(RunFile(self._path(info.name), info))
                opened.append(self._archives[-1])
            for info in m.payloads.values():
                payload = PayloadFile(self._path(info.name), info)
                if verify:
                    payload.verify()
                payload.close()  # reopened on demand: there may be many
            if verify:
                for run in self._runs():
                    for block in range(run.blocks):
                        run.read_block(block)
        except BaseException:
            for item in opened:
                item.close()
            raise

    def _runs(self) -> list[RunFile]:
        return ([self._main] if self._main else []) + self._deltas + self._archives

    # ------------------------------------------------------------------ state for the job

    @property
    def manifest(self) -> Manifest:
        """The current manifest (with the reason table as it is now). O(files)."""
        if len(self._reasons) != len(self._manifest.reasons):
            self._manifest = self._manifest.evolve(reasons=tuple(self._reasons.names()))
        return self._manifest

    def manifest_bytes(self) -> bytes:
        """:attr:`manifest` as compact JSON bytes, for keyed state. O(files)."""
        return self.manifest.to_bytes()

    @property
    def state_version(self) -> int:
        """Changes whenever the manifest changes (merge, new reason): store it then."""
        return self._state_version

    @property
    def next_seq(self) -> int:
        """Sequence number of the next operation. O(1), no I/O."""
        return self._manifest.counters.next_seq + self._fill

    @property
    def buffered(self) -> int:
        """Operations in the buffer."""
        return self._fill

    @property
    def counters(self) -> Counters:
        """The manifest's counters (as of the last merge). O(1), no I/O."""
        return self._manifest.counters

    def __len__(self) -> int:
        """Distinct keys known after the last merge (live and archived). O(1)."""
        return self._manifest.counters.keys

    def reason_code(self, reason: str) -> int:
        """The code of a reason string (added to the table if new). O(1)."""
        before = len(self._reasons)
        code = self._reasons.code(reason)
        if len(self._reasons) != before:
            self._state_version += 1
        return code

    def reason_name(self, code: int) -> str:
        """The reason string of a code. O(1), no I/O."""
        return self._reasons.name(code)

    def pending(self) -> bytes:
        """Every buffered operation as one journal chunk. O(buffer)."""
        n = self._fill
        return encode_ops(self._kinds[:n], self._keys[:n], self._values[:n], self._payloads)

    def take_journal(self) -> JournalChunk:
        """The operations buffered since the previous call, for the job's keyed state (a list
        of chunks): ``reset`` tells that a merge consumed the earlier chunks. O(new ops)."""
        start, n = self._journal_from, self._fill
        chunk = JournalChunk(
            self._journal_reset,
            encode_ops(
                self._kinds[start:n], self._keys[start:n], self._values[start:n],
                self._payloads[start:n],
            ),
            n - start,
        )
        self._journal_from = n
        self._journal_reset = False
        return chunk

    def collect_garbage(
        self,
        retained: Iterable[Manifest | Mapping[str, Any] | bytes] = (),
        keep: Iterable[str] = (),
    ) -> list[str]:
        """Delete the files of this directory that neither the current manifest nor any of
        ``retained`` refers to, except those named in ``keep``. O(files); returns the deleted
        names."""
        return collect_garbage(self.directory, [self.manifest, *retained], keep)

    # ------------------------------------------------------------------ operations

    def check(self, keys: np.ndarray | Sequence[int], *, now_ms: int) -> list[MergeResult]:
        """Buffer "is this key known?" for each key. Answers come in the merge's
        :class:`Checks`. O(1) amortised per key in memory; merges as described above."""
        return self._add(CHECK, keys, None, None, now_ms)

    def update(
        self,
        keys: np.ndarray | Sequence[int],
        values: np.ndarray,
        payloads: Sequence[bytes] | None = None,
        *,
        now_ms: int,
    ) -> list[MergeResult]:
        """Buffer "merge ``values[i]`` into the record of ``keys[i]``" (creating it, with
        ``payloads[i]`` as its URL, if the key is unknown). Updates to archived keys are
        dropped and counted. O(1) amortised per key in memory."""
        return self._add(UPDATE, keys, values, payloads, now_ms)

    def check_update(
        self,
        keys: np.ndarray | Sequence[int],
        values: np.ndarray,
        payloads: Sequence[bytes],
        *,
        now_ms: int,
    ) -> list[MergeResult]:
        """A check, then an update: the URL-seen test of discovered links. Unknown keys come
        back in :class:`NewKeys` with their payload (their URL), which is why this operation
        needs one for each key. O(1) amortised per key in memory."""
        return self._add(CHECK_UPDATE, keys, values, payloads, now_ms)

    def merge(self, *, now_ms: int, major: bool = False, select: bool = False,
              limits: ReleaseLimits | None = None, max_urls: int | None = None) -> MergeResult:
        """Merge the buffer now (a minor merge; with an empty buffer no run or payload file is
        written, only a new manifest); with ``major``, then also a major merge (fold, archive,
        select due URLs); with ``select``, then the due selection: a major merge's when one is
        due anyway, else a read-only pass over the folded runs
        (:meth:`drum.merge.MergeState.select`). ``limits`` bound the new URLs a selection
        takes per group of hosts and per shape of a host; ``max_urls`` replaces the due
        policy's ``max_urls`` for this selection.
        I/O: see the module docstring."""
        return self._merge(now_ms, force_major=major, select=select, limits=limits,
                           max_urls=max_urls)

    def _add(
        self,
        kind: int,
        keys: np.ndarray | Sequence[int],
        values: np.ndarray | None,
        payloads: Sequence[bytes] | None,
        now_ms: int,
    ) -> list[MergeResult]:
        keys = np.asarray(keys, dtype=np.uint64)
        self._ensure_open()
        if keys.ndim != 1:
            raise ValueError("keys must be a 1-D array of uint64")
        n = len(keys)
        if values is None:
            values = neutral(n)
        elif values.dtype != RECORD or values.shape != (n,):
            raise ValueError(f"values must be an array of {n} drum.RECORD records")
        byte_cap = self.config.buffer_payload_bytes
        if payloads is None:
            payloads = [b""] * n
            total = 0
            lens = None
        else:
            if len(payloads) != n:
                raise ValueError(f"{len(payloads)} payloads for {n} keys")
            total = sum(map(len, payloads))
            if total > 0xFFFF and max(map(len, payloads)) > 0xFFFF:
                raise ValueError("a payload is longer than 65535 bytes")
            lens = None if self._payload_bytes + total < byte_cap else np.fromiter(
                map(len, payloads), dtype=np.int64, count=n
            )
        kinds = np.full(n, kind, dtype=np.uint8)
        results: list[MergeResult] = []
        cap = self.config.buffer_ops
        i = 0
        if lens is None and self._fill + n < cap:  # the common case: all fits, no merge
            self._append_raw(kinds, keys, values, payloads, total)
            return results
        if lens is None:
            lens = np.fromiter(map(len, payloads), dtype=np.int64, count=n)
        while i < n:
            # (The buffer can hold more than ``cap`` after a restore with a smaller buffer:
            # then there is no room, and it is merged first.)
            count = min(cap - self._fill, n - i)
            if count > 0:
                room = byte_cap - self._payload_bytes
                fits = int(np.searchsorted(np.cumsum(lens[i : i + count]), room, side="right"))
                count = max(fits, 1) if self._fill == 0 else fits
            if count <= 0:
                results.append(self._merge(now_ms))
                continue
            self._append_raw(
                kinds[i : i + count], keys[i : i + count], values[i : i + count],
                payloads[i : i + count], int(lens[i : i + count].sum()),
            )
            i += count
            if self._fill >= cap or self._payload_bytes >= byte_cap:
                results.append(self._merge(now_ms))
        return results

    def _append_raw(
        self,
        kinds: np.ndarray,
        keys: np.ndarray,
        values: np.ndarray,
        payloads: Sequence[bytes],
        payload_bytes: int | None = None,
    ) -> None:
        n = len(keys)
        end = self._fill + n
        if end > len(self._keys):  # a restore with more pending than the buffer holds
            grow = max(end, 2 * len(self._keys))
            self._keys = np.resize(self._keys, grow)
            self._kinds = np.resize(self._kinds, grow)
            self._values = np.resize(self._values, grow)
        self._keys[self._fill : end] = keys
        self._kinds[self._fill : end] = kinds
        put(self._values, slice(self._fill, end), values)  # payload fields cleared at merge
        self._payloads.extend(payloads)
        self._payload_bytes += (
            sum(map(len, payloads)) if payload_bytes is None else payload_bytes
        )
        self._fill = end

    # ------------------------------------------------------------------ merging

    def _merge(self, now_ms: int, force_major: bool = False, select: bool = False,
               limits: ReleaseLimits | None = None, max_urls: int | None = None) -> MergeResult:
        self._ensure_open()
        old = self.manifest
        serial = old.serial + 1
        written: list[str] = []  # paths of new files, removed if the merge fails
        opened: list[RunFile] = []
        due = self.config.due if max_urls is None else replace(self.config.due, max_urls=max_urls)
        try:
            state = MergeState(
                self.directory, self.config, old, (self._main, self._deltas, self._archives),
                self._window, serial=serial, now_ms=now_ms, opener=self._opener,
                written=written, opened=opened, timings=self.timings, clock=self.clock,
                read_payloads=self.read_payloads, limits=limits, due=due,
            )
            n = self._fill
            result = state.minor(self._keys[:n], self._kinds[:n], self._values[:n],
                                 self._payloads)
            main_records = state.main_records()
            major = force_major or state.delta_records() > self.config.major_ratio * max(
                main_records, self.config.buffer_ops
            )
            if not major:
                state.tier_deltas()
                major = len(state.deltas) >= self.config.max_deltas
            if major:
                result = state.major(result, select=force_major or select)
            elif select and state.window is not None and state.window.usable(now_ms):
                result = state.select_from_window(result)
            elif select:
                result = state.select(result)
            state.pack_payloads()
            c = state.counters
            manifest = Manifest(
                serial=serial,
                token=os.urandom(4).hex(),  # unique name even after a restore of an older one
                main=state.main.info() if state.main else None,
                deltas=tuple(r.info() for r in state.deltas),
                archives=tuple(r.info() for r in state.archives),
                payloads=state.payloads,
                reasons=tuple(self._reasons.names()),
                counters=c,
            )
            if self.config.write_manifest_files:
                path = self._path(manifest.file_name)
                writer = ManifestWriter(path, self._opener, self.config.fsync)
                written.append(path)
                writer.write(manifest.to_bytes())
        except BaseException:
            for run in opened:
                run.close()
            for path in written:
                try:
                    os.remove(path)
                except OSError:
                    pass
            raise
        # Commit: swap the in-memory state (files of the old manifest stay on disk).
        keep = {id(r) for r in [state.main, *state.deltas, *state.archives] if r is not None}
        for run in self._runs():
            if id(run) not in keep:
                run.close()
        self._main, self._deltas, self._archives = state.main, state.deltas, state.archives
        self._window = state.window
        for name, amount in state.window_counts.items():
            self.window_stats[name] = self.window_stats.get(name, 0) + amount
        self._manifest = manifest
        self._state_version += 1
        self._fill = 0
        self._payloads = []
        self._payload_bytes = 0
        self._journal_from = 0
        self._journal_reset = True
        return result

    def _payload_file(self, info: FileInfo) -> PayloadFile:
        handle = self._payload_files.get(info.name)
        if handle is None:
            handle = PayloadFile(self._path(info.name), info)
            if len(self._payload_files) >= 64:
                for other in self._payload_files.values():
                    other.close()
                self._payload_files.clear()
            self._payload_files[info.name] = handle
        return handle

    def read_payloads(self, values: np.ndarray, manifest: Manifest | None = None) -> list[bytes]:
        """The payloads (URLs) of records, each checked (the 4 KiB pages holding it are read
        and checked against their CRC-32). One pread per record."""
        manifest = manifest or self._manifest
        starts = sorted(manifest.payloads)
        out = []
        for pos, length in zip(
            values["payload_pos"].tolist(), values["payload_len"].tolist(), strict=True
        ):
            if length == 0:
                out.append(b"")
                continue
            at = bisect.bisect_right(starts, pos) - 1
            if at < 0:
                raise DrumCorruptError(self.directory, f"payload position {pos} in no file")
            start = starts[at]
            info = manifest.payloads[start]
            if pos + length > start + info.records:
                raise DrumCorruptError(
                    self.directory, f"payload {pos}+{length} beyond the file {info.name}"
                )
            out.append(self._payload_file(info).read(pos - start, length))
        return out

    # ------------------------------------------------------------------ reading

    def items(self, *, archived: bool = True) -> Iterator[tuple[np.ndarray, np.ndarray, bool]]:
        """Every merged record, in key order per part: ``(keys, values, is_archived)`` chunks,
        first the live records (main run and deltas folded), then each archived set.
        The buffer is not included. O(total size) I/O, memory a few blocks per run."""
        self._ensure_open()
        for keys, values in merged_chunks([r for r in [self._main, *self._deltas] if r]):
            yield keys, values, False
        if archived:
            for run in self._archives:
                for block in range(run.blocks):
                    keys, values = run.read_block(block)
                    yield keys, values, True

    def close(self) -> None:
        """Close the open files (nothing is written). The DRUM cannot be used afterwards."""
        for run in self._runs():
            run.close()
        for handle in self._payload_files.values():
            handle.close()
        self._payload_files.clear()
        self._closed = True

    def _ensure_open(self) -> None:
        if self._closed:
            raise ValueError("this DRUM is closed")

    def __enter__(self) -> Drum:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ invariants

    def _check(self) -> None:
        """Assert the invariants (tests; O(total size) I/O and memory):

        * the manifest names exactly the open runs and every file it names exists with the
          recorded size and checksum (reopened and fully read);
        * every run's keys are strictly increasing (no duplicates within a run), blocks agree
          with the table;
        * archived sets are disjoint from each other and from the live runs;
        * the counters match: distinct keys, archived keys, sequence numbers;
        * every payload reference points inside a live segment;
        * the buffer is within its bounds and consistent with the journal marks;
        * the due window holds exactly the live records it must, each as it is on disk
          (scores to float32 rounding: sums folded in another grouping).
        """
        m = self.manifest
        assert [r.info() for r in self._runs()] == m.runs(), "open runs differ from manifest"
        live_keys: list[np.ndarray] = []
        archived_keys: list[np.ndarray] = []
        records: list[np.ndarray] = []
        for run, info in zip(self._runs(), m.runs(), strict=True):
            fresh = RunFile(self._path(info.name), info)  # re-read from disk
            try:
                last = -1
                keys_all = []
                for block in range(fresh.blocks):
                    keys, values = fresh.read_block(block)
                    entry = fresh.table[block]
                    assert len(keys) > 0, f"{info.name}: empty block"
                    assert int(entry["first"]) == int(keys[0]), f"{info.name}: fence first"
                    assert int(entry["last"]) == int(keys[-1]), f"{info.name}: fence last"
                    assert bool(np.all(keys[1:] > keys[:-1])), f"{info.name}: not sorted"
                    assert int(keys[0]) > last, f"{info.name}: blocks out of order"
                    last = int(keys[-1])
                    keys_all.append(keys)
                    records.append(values)
                keys = np.concatenate(keys_all) if keys_all else _EMPTY_KEYS
                assert len(keys) == fresh.records == run.records
                kind = KIND_ARCHIVE if run in self._archives else None
                if kind == KIND_ARCHIVE:
                    assert fresh.kind == KIND_ARCHIVE, f"{info.name}: not an archive"
                    archived_keys.append(keys)
                else:
                    live_keys.append(keys)
            finally:
                fresh.close()
        if self._main is not None:
            assert self._main.kind == KIND_MAIN
        assert all(d.kind == KIND_DELTA for d in self._deltas)
        live = np.unique(np.concatenate(live_keys)) if live_keys else _EMPTY_KEYS
        arch = np.concatenate(archived_keys) if archived_keys else _EMPTY_KEYS
        assert len(np.unique(arch)) == len(arch), "a key is in two archived sets"
        assert len(np.intersect1d(live, arch)) == 0, "a key is both live and archived"
        c = m.counters
        assert c.keys == len(live) + len(arch), f"keys counter {c.keys} != {len(live)}+{len(arch)}"
        assert c.archived == len(arch), "archived counter mismatch"
        # Payload files: consecutive ranges that cover the log exactly.
        end = 0
        for start in sorted(m.payloads):
            info = m.payloads[start]
            assert start == end, f"payload log gap or overlap at {start} ({info.name})"
            end = start + info.records
            handle = PayloadFile(self._path(info.name), info)
            handle.verify()
            handle.close()
        assert end == c.payload_end, f"payload files end at {end}, log at {c.payload_end}"
        if records:
            values = np.concatenate(records)
            refs = values[values["payload_len"] != 0]
            ends = refs["payload_pos"].astype(np.int64) + refs["payload_len"]
            assert len(refs) == 0 or int(ends.max()) <= c.payload_end, "payload beyond the log"
        assert 0 <= self._journal_from <= self._fill <= len(self._keys)
        assert len(self._payloads) == self._fill
        assert self._payload_bytes == sum(map(len, self._payloads))
        assert self._payload_bytes <= max(self.config.buffer_payload_bytes, 0xFFFF) or (
            len(self._keys) > self.config.buffer_ops
        ), "the buffer's payload bytes exceed their bound"
        window = self._window
        if window is not None:
            held = [(keys[window.holds(values)], select(values, window.holds(values)))
                    for keys, values, _ in self.items(archived=False)]
            keys = np.concatenate([k for k, _ in held]) if held else _EMPTY_KEYS
            values = concat([v for _, v in held])
            assert keys.tolist() == window.keys.tolist(), "the due window holds other records"
            assert np.allclose(values["score"], window.values["score"], rtol=1e-5)
            values, expected = values.copy(), window.values.copy()
            values["score"] = expected["score"] = 0
            assert values.tobytes() == expected.tobytes(), "a due window record is not current"
