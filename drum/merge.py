"""One merge of a DRUM: the buffer merged with the runs (minor), the runs folded into a new
main run and archived sets (major), delta runs tiered, payload files packed, a due selection
made and leased, the due window kept. :class:`MergeState` makes the new files and the state
they form; the :class:`~drum.store.Drum` takes them over only when every file is written, so a
merge that fails changes nothing. The costs of each kind of merge are in :mod:`drum.store`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from drum.config import DrumConfig, DuePolicy
from drum.due_window import DueWindow, WindowBuilder
from drum.errors import DrumCorruptError
from drum.files import (
    KIND_ARCHIVE,
    KIND_DELTA,
    KIND_MAIN,
    Opener,
    PayloadFile,
    PayloadWriter,
    RunFile,
    RunWriter,
)
from drum.fold import BlockStream, fold_pieces, merged_chunks
from drum.journal import CHECK, UPDATE
from drum.manifest import Manifest
from drum.record import (
    FAILURE_STATUSES,
    NEVER,
    PAYLOAD_FIELDS,
    RECORD,
    DrumStatus,
    combine_indexed,
    concat,
    neutral,
    select,
    take,
)
from drum.results import Checks, DueSelection, MergeResult, NewKeys, empty_checks, empty_new
from drum.selection import DueSelector, ReleaseLimits

__all__ = ["PASS_LAPS", "MergeState", "pack_plan"]

#: The phases (keys of ``timings``) of a read-only pass over the runs (:meth:`MergeState.select`)
#: whose time grows with the DRUM: reading and folding its runs and offering every record to
#: the selection and the due window. What else a release costs (writing the selected URLs'
#: marks, reading their payloads) a release from the due window costs too.
PASS_LAPS = ("select.start", "select.read_fold", "select.archive", "select.select",
             "select.window")

_EMPTY_KEYS = np.empty(0, dtype=np.uint64)


class _HostRanks:
    """Running count of records per host over a merge in key order. Memory O(hosts)."""

    def __init__(self) -> None:
        self.hosts = np.empty(0, dtype=np.uint32)
        self.counts = np.empty(0, dtype=np.int64)

    def ranks(self, hosts: np.ndarray) -> np.ndarray:
        """For each record (in order), how many records of its host came before it."""
        n = len(hosts)
        if n == 0:
            return np.empty(0, dtype=np.int64)
        order = np.argsort(hosts, kind="stable")
        sorted_hosts = hosts[order]
        head = np.empty(n, dtype=bool)
        head[0] = True
        np.not_equal(sorted_hosts[1:], sorted_hosts[:-1], out=head[1:])
        starts = np.flatnonzero(head)
        uniq = sorted_hosts[starts]
        group = np.cumsum(head) - 1
        within = np.arange(n) - starts[group]
        at = np.searchsorted(self.hosts, uniq)
        known = at < len(self.hosts)
        known[known] = self.hosts[at[known]] == uniq[known]
        prior = np.zeros(len(uniq), dtype=np.int64)
        prior[known] = self.counts[at[known]]
        ranks = np.empty(n, dtype=np.int64)
        ranks[order] = prior[group] + within
        sizes = np.diff(np.append(starts, n))
        self.counts[at[known]] += sizes[known]
        new_hosts = uniq[~known]
        if len(new_hosts):
            hosts_all = np.concatenate((self.hosts, new_hosts))
            counts_all = np.concatenate((self.counts, sizes[~known]))
            resort = np.argsort(hosts_all, kind="stable")
            self.hosts, self.counts = hosts_all[resort], counts_all[resort]
        return ranks


class MergeState:
    """One merge of a DRUM in progress: the new files and the state they make (runs, payload
    files, counters, due window), which the :class:`~drum.store.Drum` takes over only at the
    end, so a failure leaves the DRUM as it was.

    It starts from the DRUM's ``manifest``, its open ``runs`` (main run or None, delta runs,
    archived sets) and its due ``window``; it creates files in ``directory`` through
    ``opener``, records each path in ``written`` and each run it opens in ``opened`` (for the
    caller to remove and close if the merge fails), adds the time of each phase to
    ``timings`` (seconds of ``clock``), and reads the selected URLs with ``read_payloads``."""

    def __init__(
        self,
        directory: str,
        config: DrumConfig,
        manifest: Manifest,
        runs: tuple[RunFile | None, list[RunFile], list[RunFile]],
        window: DueWindow | None,
        *,
        serial: int,
        now_ms: int,
        opener: Opener,
        written: list[str],
        opened: list[RunFile],
        timings: dict[str, float],
        read_payloads: Callable[[np.ndarray, Manifest], list[bytes]],
        limits: ReleaseLimits | None = None,
        due: DuePolicy | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.directory = directory
        self.opener = opener
        self.timings = timings
        self._clock = clock
        self.read_payloads = read_payloads
        self.limits = limits
        #: The due policy of this merge's selection (the DRUM's, or with another max_urls).
        self.due = due if due is not None else config.due
        self.config = config
        self.serial = serial
        self.now_ms = now_ms
        self.written = written
        self.opened = opened
        main, deltas, archives = runs
        self.main = main
        self.deltas = list(deltas)
        self.archives = list(archives)
        self.payloads = dict(manifest.payloads)
        self.counters = manifest.counters
        self.manifest = manifest
        self._files = 0
        self._last_lap = clock()
        self.window = window if self.config.windowed else None
        self.window_counts: dict[str, int] = {}

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def _new_path(self, prefix: str) -> str:
        """The path of the merge's next new file: a name never used before (the serial, a
        random part, the file's number in the merge)."""
        name = f"{prefix}-{self.serial:010x}-{os.urandom(4).hex()}-{self._files:x}.drum"
        self._files += 1
        return self._path(name)

    def _lap(self, name: str) -> None:
        """Add the time since the previous lap to ``timings[name]``."""
        now = self._clock()
        timings = self.timings
        timings[name] = timings.get(name, 0.0) + now - self._last_lap
        self._last_lap = now

    def main_records(self) -> int:
        return self.main.records if self.main else 0

    def delta_records(self) -> int:
        return sum(d.records for d in self.deltas)

    def _run_writer(self, kind: int) -> RunWriter:
        path = self._new_path("run")
        writer = RunWriter(
            path, kind, block_records=self.config.block_records, opener=self.opener,
            fsync=self.config.fsync,
        )
        self.written.append(path)
        return writer

    def _finish_run(self, writer: RunWriter) -> RunFile:
        info = writer.close()
        run = RunFile(writer.path, info)
        self.opened.append(run)
        return run

    # -- lookups

    def _member(self, run: RunFile, ukeys: np.ndarray, out: np.ndarray) -> None:
        """Mark in ``out`` the sorted unique ``ukeys`` present in ``run``: reads only the key
        blocks whose range holds one of them."""
        table = run.table
        if len(table) == 0 or len(ukeys) == 0:
            return
        lo = np.searchsorted(ukeys, table["first"], side="left")
        hi = np.searchsorted(ukeys, table["last"], side="right")
        for block in np.flatnonzero(hi > lo).tolist():
            a, b = int(lo[block]), int(hi[block])
            keys = run.read_keys(block)
            q = ukeys[a:b]
            at = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
            out[a:b] |= keys[at] == q

    def _mark_present(
        self, run: RunFile, ukeys: np.ndarray, out: np.ndarray, found: np.ndarray
    ) -> None:
        """Mark in ``out`` the sorted unique ``ukeys`` present in ``run``, looking up only those
        not ``found`` in an earlier run: a key found in the main run (most keys a batch updates)
        is not searched for in the delta runs, and no live key in the archived sets (a key is
        in one or the other, never both)."""
        missing = np.flatnonzero(~found)
        if len(missing) == len(ukeys):
            self._member(run, ukeys, out)
            return
        present = np.zeros(len(missing), dtype=bool)
        self._member(run, ukeys[missing], present)
        out[missing[present]] = True

    # -- minor merge

    def minor(self, keys: np.ndarray, kinds: np.ndarray, values: np.ndarray,
              payloads: Sequence[bytes]) -> MergeResult:
        """The minor merge of the buffered operations (``keys``, ``kinds``, ``values`` and
        ``payloads``: the buffer, in operation order); its cost is in :mod:`drum.store`."""
        n = len(keys)
        base = self.counters.next_seq
        merge_no = self.counters.merges + 1
        if n == 0:
            self.counters = replace(self.counters, merges=merge_no)
            return MergeResult(merge_no, self.now_ms, base, empty_checks(), empty_new(), 0)
        order = np.argsort(keys)  # not stable (three times faster than a stable sort)...
        sk = keys[order]
        head = np.empty(n, dtype=bool)
        head[0] = True
        np.not_equal(sk[1:], sk[:-1], out=head[1:])
        starts = np.flatnonzero(head)
        ukeys = sk[starts]
        group = np.cumsum(head) - 1
        if len(starts) < n:  # ...so put each key's operations back in sequence order
            order = np.sort(group * n + order) % n
        self._lap("minor.sort")
        live = np.zeros(len(ukeys), dtype=bool)
        archived = np.zeros(len(ukeys), dtype=bool)
        for run in ([self.main] if self.main else []) + self.deltas:
            self._mark_present(run, ukeys, live, live)
        for run in self.archives:
            self._mark_present(run, ukeys, archived, live | archived)
        self._lap("minor.lookup")
        skind = kinds[order]
        inserts = (skind & UPDATE) != 0
        count = np.cumsum(inserts)
        before = count - inserts
        before = before - before[starts][group]
        seen = (live | archived)[group] | (before > 0)
        # Back to operation order by scattering through the permutation (no second sort).
        seen_by_op = np.empty(n, dtype=bool)
        seen_by_op[order] = seen
        is_check = (kinds & CHECK) != 0
        checks = Checks(
            (base + np.flatnonzero(is_check)).astype(np.uint64), keys[is_check],
            seen_by_op[is_check],
        )
        on_archive = archived[group]
        dropped = int(np.count_nonzero(inserts & on_archive))
        applied = inserts & ~on_archive
        akeys = sk[applied]
        new_mask = inserts & ~seen  # the first insert of each key unknown so far
        if len(akeys):
            head2 = np.empty(len(akeys), dtype=bool)
            head2[0] = True
            np.not_equal(akeys[1:], akeys[:-1], out=head2[1:])
            starts2 = np.flatnonzero(head2)
            delta_keys = akeys[starts2]
            delta_values = combine_indexed(values, order[applied], starts2)
            for name in PAYLOAD_FIELDS:
                delta_values[name] = 0  # payload references are the DRUM's to set
        else:
            delta_keys, delta_values = _EMPTY_KEYS, np.empty(0, dtype=RECORD)
        self._lap("minor.fold")
        # New keys in operation order (their payloads are read sequentially from the buffer).
        new_pos_by_key = order[new_mask]
        at_by_op = np.empty(n, dtype=np.int64)
        at_by_op[new_pos_by_key] = np.searchsorted(delta_keys, sk[new_mask])  # sorted queries
        is_new = np.zeros(n, dtype=bool)
        is_new[new_pos_by_key] = True
        new_pos = np.flatnonzero(is_new)
        new_keys = keys[new_pos]
        at = at_by_op[new_pos]
        new_payloads = [payloads[i] for i in new_pos.tolist()]
        log_end = self.counters.payload_end
        lens = np.fromiter(map(len, new_payloads), dtype=np.int64, count=len(new_payloads))
        total = int(lens.sum())
        if total:
            path = self._new_path("pay")
            writer = PayloadWriter(path, self.opener, self.config.fsync)
            self.written.append(path)
            blob = b"".join(new_payloads)
            self.payloads[log_end] = writer.write(blob)
            offsets = np.cumsum(lens) - lens
            has = lens > 0
            target = at[has]
            delta_values["payload_pos"][target] = log_end + offsets[has]
            delta_values["payload_len"][target] = lens[has]
            log_end += total
        if self.config.new_url_lease_ms and len(at):
            lease = self.now_ms + self.config.new_url_lease_ms
            current = delta_values["leased_until_ms"][at]
            delta_values["leased_until_ms"][at] = np.maximum(current, lease)
        self._lap("minor.payloads")
        runs_before = ([self.main] if self.main else []) + self.deltas
        if len(delta_keys):
            writer = self._run_writer(KIND_DELTA)
            writer.append(delta_keys, delta_values)
            self.deltas.append(self._finish_run(writer))
        self._lap("minor.write_delta")
        if self.window is not None and len(delta_keys):
            existed = live[np.searchsorted(ukeys, delta_keys)]
            self._keep_window(delta_keys, delta_values, existed, runs_before)
        new = NewKeys(
            (base + new_pos).astype(np.uint64), new_keys, take(delta_values, at), new_payloads,
            kinds[new_pos],
        )
        c = self.counters
        self.counters = replace(
            c,
            keys=c.keys + len(new_keys),
            next_seq=c.next_seq + n,
            payload_end=log_end,
            merges=merge_no,
            dropped_updates=c.dropped_updates + dropped,
        )
        return MergeResult(merge_no, self.now_ms, base + n, checks, new, dropped)

    # -- major merge

    def _archive_mask(self, values: np.ndarray, ranks: _HostRanks) -> np.ndarray:
        policy = self.config.archive
        status = values["status"]
        leased = values["leased_until_ms"] > self.now_ms
        mask = np.zeros(len(values), dtype=bool)
        if policy.max_failures > 0:
            mask |= np.isin(status, FAILURE_STATUSES) & (
                values["failure_count"] >= policy.max_failures
            )
        if policy.min_score is not None:
            mask |= (status == DrumStatus.UNFETCHED) & (values["score"] < policy.min_score)
        if policy.archive_done:
            mask |= (
                (status >= 2) & (status != DrumStatus.QUEUED) & (values["next_fetch_ms"] == NEVER)
            )
        mask &= ~leased
        if policy.host_max_urls > 0:
            keep = np.flatnonzero(~mask)
            hosts = values["host"][keep]
            rank = ranks.ranks(hosts)
            over = (
                (rank >= policy.host_max_urls)
                & (hosts != 0)
                & (status[keep] == DrumStatus.UNFETCHED)
                & ~leased[keep]
            )
            mask[keep[over]] = True
        return mask

    def tier_deltas(self) -> None:
        """Fold the newest delta runs into one while :func:`pack_plan` says so (the newest
        ``delta_fanout`` of one size class): size-tiered, each record copied once a class. The
        folded run takes their place in the sequence (runs stay oldest first, as the merge
        rule needs; it is associative). O(their records) I/O."""
        config = self.config
        while True:
            count = pack_plan([d.records for d in self.deltas], config.delta_fanout,
                              config.delta_base_records)
            if not count:
                return
            chosen = self.deltas[-count:]
            writer = self._run_writer(KIND_DELTA)
            for keys, values in merged_chunks(chosen):
                writer.append(keys, values)
            folded = self._finish_run(writer)
            self.deltas = [*self.deltas[:-count], folded]
            self.counters = replace(self.counters,
                                    delta_folds=self.counters.delta_folds + 1)
            self._lap("tier_deltas")

    def select(self, minor_result: MergeResult) -> MergeResult:
        """The due selection of a major merge without the major merge: one read-only pass over
        the folded main and delta runs (records the archive policy gives up on are passed
        over, not moved); only the selected URLs' lease or QUEUED mark is written, as a small
        delta run. O(K x record) bytes read, nothing rewritten."""
        return self._fold_pass(minor_result, rewrite=False, selecting=True)

    def major(self, minor_result: MergeResult, *, select: bool = True) -> MergeResult:
        """Fold every run into a new main run and archive; with ``select``, the due selection
        too (a major merge that runs because the deltas are many selects nothing: URLs go out
        when the DRUM's user asks)."""
        return self._fold_pass(minor_result, rewrite=True, selecting=select)

    def select_from_window(self, minor_result: MergeResult) -> MergeResult:
        """The due selection made from the due window alone (:mod:`drum.due_window`): the
        same records a pass over the runs would select, nothing read; only the selected URLs'
        lease or QUEUED mark is written, as a small delta run. O(window) time."""
        window = self.window
        assert window is not None
        selector = DueSelector(self.due, self.limits)
        selector.offer_due(window.keys, window.values, self.now_ms)
        self._lap("window.select")
        self._count_window("selections")
        due_keys, due_values, lease_until, marks = self._lease(selector, self.deltas)
        self.window = window.mark(*marks) if marks is not None else window
        self.counters = replace(self.counters, selections=self.counters.selections + 1)
        next_due = selector.next_due_ms
        rebuild = window.next_rebuild_ms()
        if rebuild is not None and (next_due is None or rebuild < next_due):
            next_due = rebuild  # (records due after the horizon are not in the window)
        selection = self._due_selection(selector, due_keys, due_values, lease_until, next_due,
                                        from_window=True)
        return replace(minor_result, due=selection)

    def _fold_pass(
        self, minor_result: MergeResult, *, rewrite: bool, selecting: bool
    ) -> MergeResult:
        now = self.now_ms
        lap = "major" if rewrite else "select"
        sources = [r for r in [self.main, *self.deltas] if r is not None]
        main_writer = self._run_writer(KIND_MAIN) if rewrite else None
        archive_writer: RunWriter | None = None
        selector = DueSelector(self.due, self.limits)
        due_policy = self.due
        builder = None
        if self.config.windowed:
            builder = WindowBuilder(due_policy.window_urls, max(1, due_policy.window_urls // 2),
                                    now)
        ranks = _HostRanks()
        archived = 0
        self._lap(f"{lap}.start")
        for keys, values in merged_chunks(sources):
            self._lap(f"{lap}.read_fold")
            to_archive = self._archive_mask(values, ranks)
            kept = ~to_archive
            if to_archive.any() and rewrite:
                if archive_writer is None:
                    archive_writer = self._run_writer(KIND_ARCHIVE)
                archive_writer.append(keys[to_archive], select(values, to_archive))
                archived += int(np.count_nonzero(to_archive))
            keys, values = keys[kept], select(values, kept)
            self._lap(f"{lap}.archive")
            if main_writer is not None:
                main_writer.append(keys, values)
                self._lap("major.write_main")
            if selecting and due_policy.max_urls > 0:
                selector.offer_due(keys, values, now)
                self._lap(f"{lap}.select")
            if builder is not None:
                builder.offer(keys, values)
                self._lap(f"{lap}.window")
        new_deltas: list[RunFile] = []
        if main_writer is not None:
            new_main = self._finish_run(main_writer) if main_writer.total else None
            if new_main is None:
                main_writer.abort()
                self.written.remove(main_writer.path)
            self._lap("major.write_main")
        else:
            new_main, new_deltas = self.main, list(self.deltas)
        new_archives = list(self.archives)
        if archive_writer is not None:
            new_archives.append(self._finish_run(archive_writer))
        due_keys, due_values, lease_until, marks = self._lease(selector, new_deltas)
        if builder is not None:
            window = builder.result()
            if window is None:
                self._count_window(f"given_up.{builder.failed}")
            else:
                self._count_window("builds")
                if marks is not None:
                    window = window.mark(*marks)
            self.window = window
        self._lap(f"{lap}.lease")
        compacted = False
        if len(new_archives) > self.config.max_archives:
            new_archives = [self._compact(new_archives)]
            compacted = True
        self._lap(f"{lap}.compact")
        self.main, self.deltas, self.archives = new_main, new_deltas, new_archives
        c = self.counters
        self.counters = replace(
            c,
            archived=c.archived + archived,
            major_merges=c.major_merges + int(rewrite),
            selections=c.selections + int(not rewrite),
            compactions=c.compactions + int(compacted),
        )
        due_selection = None
        if selecting:
            due_selection = self._due_selection(selector, due_keys, due_values, lease_until,
                                                selector.next_due_ms)
        self._lap(f"{lap}.read_due_payloads")
        return replace(minor_result, major=rewrite, due=due_selection, archived=archived,
                       compacted=compacted)

    def _lease(
        self, selector: DueSelector, deltas: list[RunFile]
    ) -> tuple[np.ndarray, np.ndarray, int, tuple[np.ndarray, np.ndarray] | None]:
        """The selection of ``selector``, its lease time, and its lease or QUEUED marks
        (sorted keys, records), written as a delta run appended to ``deltas`` (None: none)."""
        due_policy = self.config.due
        due_keys, due_values = selector.result()
        leased = due_policy.lease_ms > 0 and not due_policy.mark_queued
        lease_until = self.now_ms + due_policy.lease_ms if leased else 0
        marks = None
        if len(due_keys) and (lease_until or due_policy.mark_queued):
            order = np.argsort(due_keys)
            lease = neutral(len(due_keys))
            if due_policy.mark_queued:
                lease["status"] = DrumStatus.QUEUED
                lease["status_ms"] = self.now_ms
            else:
                lease["leased_until_ms"] = lease_until
            writer = self._run_writer(KIND_DELTA)
            writer.append(due_keys[order], lease)
            deltas.append(self._finish_run(writer))
            marks = (due_keys[order], lease)
        return due_keys, due_values, lease_until, marks

    def _due_selection(
        self,
        selector: DueSelector,
        due_keys: np.ndarray,
        due_values: np.ndarray,
        lease_until: int,
        next_due_ms: int | None,
        *,
        from_window: bool = False,
    ) -> DueSelection:
        due_manifest = self.manifest.evolve(payloads=self.payloads)
        held = selector.limits.held() if selector.limits is not None else (0, 0)
        return DueSelection(
            due_keys,
            due_values,
            self.read_payloads(due_values, due_manifest),
            lease_until,
            remaining=selector.due - len(due_keys),
            full=selector.full,
            next_due_ms=next_due_ms,
            revisits=selector.revisits,
            from_window=from_window,
            held_by_group=held[0],
            held_by_shape=held[1],
            held_by_rank=selector.limits.held_by_rank if selector.limits is not None else 0,
            held_best_rank=(selector.limits.held_best_rank if selector.limits is not None
                            else float("-inf")),
            new_rank_counts=(selector.limits.new_rank_counts if selector.limits is not None
                             else None),
        )

    # -- the due window

    def _count_window(self, name: str) -> None:
        self.window_counts[name] = self.window_counts.get(name, 0) + 1

    def _keep_window(
        self, keys: np.ndarray, deltas: np.ndarray, existed: np.ndarray, runs: list[RunFile]
    ) -> None:
        """The due window after this merge's delta records (``runs``: those before it)."""
        window = self.window
        assert window is not None
        if not window.usable(self.now_ms):
            self._count_window("given_up.horizon")
            self.window = None
            return

        def lookup(wanted: np.ndarray) -> np.ndarray:
            self.window_counts["lookups"] = self.window_counts.get("lookups", 0) + len(wanted)
            return self._records(runs, wanted)

        self.window = window.apply(keys, deltas, existed, lookup)
        if self.window is None:
            self._count_window("given_up.full")
        self._lap("minor.window")

    def _records(self, runs: list[RunFile], keys: np.ndarray) -> np.ndarray:
        """The folded records of sorted unique ``keys``, every one in ``runs`` (oldest
        first): reads the blocks whose range holds one of them (checked)."""
        pieces = []
        for run in runs:
            table = run.table
            lo = np.searchsorted(keys, table["first"], side="left")
            hi = np.searchsorted(keys, table["last"], side="right")
            for block in np.flatnonzero(hi > lo).tolist():
                block_keys, block_values = run.read_block(block)
                wanted = keys[int(lo[block]) : int(hi[block])]
                at = np.minimum(np.searchsorted(block_keys, wanted), len(block_keys) - 1)
                found = block_keys[at] == wanted
                pieces.append((wanted[found], take(block_values, at[found])))
        found_keys, values = fold_pieces(pieces)
        if not np.array_equal(found_keys, keys):
            raise DrumCorruptError(self.directory, "a key found in a run is not there")
        return values

    # -- payload packing

    def pack_payloads(self) -> None:
        """Pack the newest payload files while :func:`pack_plan` says so. Each pack reads its
        files in order (pages checked) and writes one file with the same bytes; records are
        untouched (positions are log positions). O(packed bytes) I/O, memory one chunk."""
        config = self.config
        while True:
            starts = sorted(self.payloads)
            sizes = [self.payloads[start].records for start in starts]
            count = pack_plan(sizes, config.payload_pack_fanout, config.payload_pack_base_bytes)
            if not count:
                return
            chosen = starts[-count:]
            path = self._new_path("pay")
            writer = PayloadWriter(path, self.opener, config.fsync)
            self.written.append(path)
            try:
                for start in chosen:
                    source = PayloadFile(self._path(self.payloads[start].name),
                                         self.payloads[start])
                    try:
                        for offset in range(0, source.length, _PACK_CHUNK):
                            size = min(_PACK_CHUNK, source.length - offset)
                            writer.append(source.read(offset, size))
                    finally:
                        source.close()
                info = writer.finish()
            except BaseException:
                writer.abort()
                raise
            for start in chosen:
                del self.payloads[start]
            self.payloads[chosen[0]] = info
            packs = self.counters.payload_packs + 1
            self.counters = replace(self.counters, payload_packs=packs)
            self._lap("pack_payloads")

    def _compact(self, archives: list[RunFile]) -> RunFile:
        """Merge archived sets (disjoint keys) into one. O(their size) I/O."""
        writer = self._run_writer(KIND_ARCHIVE)
        streams = [s for s in (BlockStream(r) for r in archives) if not s.done]
        while streams:
            bound = min(s.last for s in streams)
            pieces = [s.take_until(bound) for s in streams]
            streams = [s for s in streams if not s.done]
            keys = np.concatenate([p[0] for p in pieces])
            values = concat([p[1] for p in pieces])
            order = np.argsort(keys)
            writer.append(keys[order], take(values, order))
        return self._finish_run(writer)


#: Bytes copied per read while packing payload files (a multiple of the page size).
_PACK_CHUNK = 1 << 20


def pack_plan(sizes: Sequence[int], fanout: int, base_bytes: int) -> int:
    """How many of the newest payload files (``sizes``, oldest first) to pack into one: the
    newest ``fanout`` when they are all of one size class (class 0 below ``fanout x
    base_bytes``, class k up to ``fanout^(k+1) x base_bytes``), else 0. Like a size-tiered
    LSM tree: files stay few (under ``fanout`` per class) and a byte is copied once per class.
    """
    if len(sizes) < fanout:
        return 0
    classes = set()
    for size in sizes[-fanout:]:
        level, bound = 0, fanout * base_bytes
        while size >= bound:
            level, bound = level + 1, bound * fanout
        classes.add(level)
    return fanout if len(classes) == 1 else 0

