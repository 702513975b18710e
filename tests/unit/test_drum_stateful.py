"""Randomised stateful test of the DRUM against a plain-dict model (sortedcontainers style).

Tiny buffers, blocks and limits make minor merges, major merges, archiving, compaction,
checkpoints, restores (also from older checkpoints, and with other buffer sizes), garbage
collection and full-disk failures happen constantly; ``_check()`` runs after every step and
the whole content is compared with the model's. Discoveries may carry a sitemap's announcement
and outcomes recrawl fields, or not. A second machine selects from a due window
(:mod:`drum.due_window`), on few keys so that windows are built, cut at a horizon and given up
often: ``_check()`` compares its window with the records on disk after every step, and its
selections must be the model's, which knows nothing of windows.
"""

from __future__ import annotations

import copy
import errno
import shutil
import tempfile
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from drum import (
    NEVER,
    RECORD,
    ArchivePolicy,
    Drum,
    DrumConfig,
    DrumStatus,
    DrumWriteError,
    DuePolicy,
    combine_one,
    discoveries,
    neutral,
    outcomes,
    record_dict,
)

KEYS = [(k * 0x9E3779B97F4A7C15) % (1 << 64) for k in range(1, 41)]
HOSTS = [0, 11, 22, 33]
PAYLOAD_FIELDS = ("payload_pos", "payload_len", "reserved")

CONFIG = DrumConfig(
    buffer_ops=7,
    buffer_payload_bytes=120,
    block_records=3,
    max_deltas=3,
    major_ratio=0.5,
    delta_fanout=2,
    delta_base_records=2,
    max_archives=2,
    payload_pack_fanout=2,
    payload_pack_base_bytes=40,
    new_url_lease_ms=5,
    due=DuePolicy(max_urls=4, per_host=2, min_score=0.5, lease_ms=20),
    archive=ArchivePolicy(min_score=0.6, max_failures=2, host_max_urls=6),
    fsync=False,
)
#: Selections from a due window (nothing archived: records given up on would leave it), and
#: major merges, which build it anew, less often.
WINDOWED = replace(
    CONFIG,
    max_deltas=6,
    major_ratio=2.0,
    due=DuePolicy(max_urls=4, per_host=2, lease_ms=20, window_urls=8),
    archive=ArchivePolicy(),
)
assert WINDOWED.windowed
assert not CONFIG.windowed


def payload_of(key: int) -> bytes:
    return f"http://h{key % 7}.example/{key:x}".encode()


class FlakyOpener:
    """Opens files for writing; when ``fail_after`` is set, writes raise ENOSPC past it."""

    def __init__(self) -> None:
        self.fail_after: int | None = None

    def __call__(self, path: str):
        handle = open(path, "xb")  # noqa: SIM115
        if self.fail_after is None:
            return handle
        return _FullDisk(handle, self.fail_after)


class _FullDisk:
    def __init__(self, handle, budget: int) -> None:
        self._handle = handle
        self._budget = budget

    def write(self, data) -> int:
        data = bytes(data)
        if len(data) > self._budget:
            self._handle.write(data[: self._budget])
            self._budget = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        self._budget -= len(data)
        return self._handle.write(data)

    def flush(self) -> None:
        self._handle.flush()

    def fileno(self) -> int:
        return self._handle.fileno()

    def close(self) -> None:
        self._handle.close()


class Model:
    """What the DRUM must hold: live and archived records, payloads, the buffered ops."""

    def __init__(self, config: DrumConfig) -> None:
        self.config = config
        self.live: dict[int, dict] = {}
        self.archived: dict[int, dict] = {}
        self.payloads: dict[int, bytes] = {}
        self.buffer: list[tuple[int, int, int, dict, bytes]] = []  # seq, kind, key, value, p
        self.next_seq = 0

    def add(self, kind: int, keys: list[int], values: np.ndarray | None,
            payloads: list[bytes] | None) -> None:
        for i, key in enumerate(keys):
            value = record_dict(values[i]) if values is not None else None
            payload = payloads[i] if payloads is not None else b""
            self.buffer.append((self.next_seq, kind, key, value, payload))
            self.next_seq += 1

    def merge(self, seq_end: int, now_ms: int):
        ops = [op for op in self.buffer if op[0] < seq_end]
        self.buffer = [op for op in self.buffer if op[0] >= seq_end]
        checks, new, dropped = [], [], 0
        inserted: set[int] = set()
        for seq, kind, key, value, payload in ops:
            known = key in self.live or key in self.archived
            if kind & 1:
                checks.append((seq, key, known))
            if kind & 2:
                if key in self.archived:
                    dropped += 1
                    continue
                value = dict(value)
                for field in PAYLOAD_FIELDS:
                    value[field] = 0
                if key in self.live:
                    self.live[key] = combine_one(self.live[key], value)
                else:
                    self.live[key] = value
                    self.payloads[key] = payload
                    inserted.add(key)
                    new.append((seq, key, payload, kind))
        for key in inserted:
            lease = now_ms + self.config.new_url_lease_ms
            self.live[key]["leased_until_ms"] = max(self.live[key]["leased_until_ms"], lease)
        return checks, new, dropped

    def major(self, now_ms: int, rewrite: bool = True, select: bool = True):
        """A major merge's archiving and (with ``select``) due selection; without
        ``rewrite``, a selection pass: records the archive policy gives up on are passed over
        but stay live."""
        policy = self.config.archive
        due = self.config.due
        host_seen: dict[int, int] = {}
        to_archive = []
        candidates = []
        for key in sorted(self.live):
            r = self.live[key]
            leased = r["leased_until_ms"] > now_ms
            out = (
                (policy.max_failures > 0 and r["status"] in (4, 5)
                 and r["failure_count"] >= policy.max_failures)
                or (policy.min_score is not None and r["status"] == 1
                    and np.float32(r["score"]) < np.float32(policy.min_score))
                or (policy.archive_done and r["status"] >= 2 and r["status"] != 8
                    and r["next_fetch_ms"] == NEVER)
            ) and not leased
            if not out and policy.host_max_urls:
                rank = host_seen.get(r["host"], 0)
                host_seen[r["host"]] = rank + 1
                out = (rank >= policy.host_max_urls and r["host"] != 0 and r["status"] == 1
                       and not leased)
            if out:
                to_archive.append(key)
                continue
            if (r["status"] >= 1 and next_fetch(r) <= now_ms and not leased
                    and r["score"] >= due.min_score):
                candidates.append((key, r))
        if rewrite:
            for key in to_archive:
                self.archived[key] = self.live.pop(key)
        candidates.sort(key=lambda kr: (-kr[1]["score"], kr[0]))
        per_host: dict[int, int] = {}
        chosen = []
        for key, r in candidates:
            if r["host"] != 0:
                if per_host.get(r["host"], 0) >= due.per_host:
                    continue
                per_host[r["host"]] = per_host.get(r["host"], 0) + 1
            chosen.append(key)
        chosen = chosen[: due.max_urls] if select else []
        lease = neutral(1)
        lease["leased_until_ms"] = now_ms + due.lease_ms
        lease_dict = record_dict(lease[0])
        for key in chosen:
            self.live[key] = combine_one(self.live[key], lease_dict)
        return chosen, len(to_archive) if rewrite else 0


def next_fetch(record: dict) -> int:
    """When a record is due: its next fetch time, or the time of a sitemap's announcement newer
    than its last fetch outcome when that is earlier (not for a URL never due again)."""
    due = record["next_fetch_ms"]
    if due != NEVER and record["announced_s"] > record["recrawl_s"] > 0:
        due = min(due, record["announced_s"] * 1000)
    return due


def strip(record: dict) -> dict:
    out = {k: v for k, v in record.items() if k not in PAYLOAD_FIELDS}
    out["score"] = float(np.float32(out["score"]))
    return out


#: Indexes into the machine's keys (taken modulo their number).
keys_st = st.lists(st.integers(0, len(KEYS) - 1), min_size=1, max_size=9)
score_st = st.integers(0, 8).map(lambda q: q / 4)
#: A sitemap's announcement (None: none), or a fetch's time in recrawl fields (None: no
#: recrawl fields): seconds from the clock's (a few seconds, whose milliseconds go by).
seconds_st = st.one_of(st.none(), st.integers(-3, 1))


class DrumMachine(RuleBasedStateMachine):
    CONFIG = CONFIG
    KEYS = KEYS

    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="drum-test-")
        self.opener = FlakyOpener()
        self.config = self.CONFIG
        self.drum = Drum.create(self.directory, self.config, opener=self.opener)
        self.model = Model(self.CONFIG)
        self.now = 10_000
        self.journal: list[bytes] = []
        self.checkpoints: list[tuple[bytes, list[bytes], Model, int]] = []

    def teardown(self) -> None:
        self.drum.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    @initialize()
    def start(self) -> None:
        pass

    # -- helpers

    def _results(self, results) -> None:
        for result in results:
            self._expect(result)
        chunk = self.drum.take_journal()
        if chunk.reset:
            self.journal = []
        self.journal.append(chunk.data)

    def _expect(self, result) -> None:
        checks, new, dropped = self.model.merge(result.seq_end, result.now_ms)
        assert result.checks.seq.tolist() == [c[0] for c in checks]
        assert result.checks.keys.tolist() == [c[1] for c in checks]
        assert result.checks.seen.tolist() == [c[2] for c in checks]
        assert result.new.seq.tolist() == [n[0] for n in new]
        assert result.new.keys.tolist() == [n[1] for n in new]
        assert result.new.payloads == [n[2] for n in new]
        assert result.new.kinds.tolist() == [n[3] for n in new]
        assert result.dropped_updates == dropped
        if result.dropped_updates:
            event("dropped updates to archived keys")
        if self.drum.counters.payload_packs:
            event("payload files packed")
        if result.major:
            event("major merge")
            if result.archived:
                event("archived")
            if result.compacted:
                event("compacted archived sets")
            if result.due is not None and len(result.due.keys):
                event("selected due URLs")
            chosen, archived = self.model.major(result.now_ms, select=result.due is not None)
            assert result.archived == archived
            if result.due is not None:
                assert result.due.keys.tolist() == chosen
                assert result.due.payloads == [self.model.payloads[k] for k in chosen]
        elif result.due is not None:
            event("selection from the window" if result.due.from_window
                  else "selection without a major merge")
            chosen, _ = self.model.major(result.now_ms, rewrite=False)
            assert result.archived == 0
            assert result.due.keys.tolist() == chosen
            assert result.due.payloads == [self.model.payloads[k] for k in chosen]
        if self.drum.counters.delta_folds:
            event("delta runs folded")

    def _host(self, keys: list[int]) -> list[int]:
        return [HOSTS[k % len(HOSTS)] for k in keys]

    def _keys(self, picks: list[int]) -> list[int]:
        return [self.KEYS[i % len(self.KEYS)] for i in picks]

    def _restore(self, manifest: bytes, journal: list[bytes]) -> None:
        self.drum.close()
        self.drum = Drum.restore(self.directory, manifest, journal, self.config,
                                 opener=self.opener)
        self.journal = list(journal)

    # -- rules

    @rule(picks=keys_st)
    def check(self, picks: list[int]) -> None:
        keys = self._keys(picks)
        self.model.add(1, keys, None, None)
        self._results(self.drum.check(keys, now_ms=self.now))

    @rule(picks=keys_st, score=score_st, depth=st.integers(0, 5), announced=seconds_st)
    def discover(self, picks: list[int], score: float, depth: int, announced: int | None
                 ) -> None:
        keys = self._keys(picks)
        values = discoveries(len(keys), now_ms=self.now, score=score, depth=depth,
                             host=self._host(keys))
        if announced is not None:
            values["announced_s"] = self.now // 1000 + announced
        payloads = [payload_of(k) for k in keys]
        self.model.add(3, keys, values, payloads)
        self._results(self.drum.check_update(keys, values, payloads, now_ms=self.now))

    @rule(
        picks=keys_st,
        status=st.sampled_from(list(DrumStatus)[2:]),
        back=st.integers(0, 30),
        recrawl=st.one_of(st.just(NEVER), st.integers(0, 200)),
        fetched=seconds_st,
    )
    def outcome(self, picks: list[int], status: DrumStatus, back: int, recrawl: int,
                fetched: int | None) -> None:
        """An outcome, with recrawl fields of a fetch ``fetched`` seconds from the clock's, or
        without them."""
        keys = self._keys(picks)
        at = self.now - back
        next_fetch = NEVER if recrawl == NEVER else at + recrawl
        reason = self.drum.reason_code(f"r:{status.name.lower()}")
        values = outcomes(len(keys), status=status, at_ms=at, http_status=200 + back,
                          reason=reason, next_fetch_ms=next_fetch, host=self._host(keys))
        if fetched is not None:
            values["recrawl_s"] = at // 1000 + fetched
            values["interval_s"] = 60
            values["visits"] = 1
        payloads = [payload_of(k) for k in keys]
        self.model.add(2, keys, values, payloads)
        self._results(self.drum.update(keys, values, payloads, now_ms=self.now))

    @rule(step=st.integers(1, 40))
    def advance(self, step: int) -> None:
        self.now += step

    @rule(mode=st.sampled_from(["minor", "major", "select"]))
    def merge(self, mode: str) -> None:
        result = self.drum.merge(now_ms=self.now, major=mode == "major", select=mode == "select")
        # URLs are selected when asked for, and only then.
        assert (result.due is not None) == (mode != "minor")
        self._results([result])

    @rule()
    def checkpoint(self) -> None:
        self.checkpoints.append(
            (self.drum.manifest_bytes(), list(self.journal), copy.deepcopy(self.model), self.now)
        )
        self.checkpoints = self.checkpoints[-3:]
        self.drum.collect_garbage([c[0] for c in self.checkpoints])

    @precondition(lambda self: self.checkpoints)
    @rule(which=st.integers(0, 2))
    def fail_and_restore(self, which: int) -> None:
        manifest, journal, model, now = self.checkpoints[min(which, len(self.checkpoints) - 1)]
        self._restore(manifest, journal)
        self.model = copy.deepcopy(model)
        self.now = max(self.now, now)

    @rule()
    def reopen_same(self) -> None:
        self._restore(self.drum.manifest_bytes(), [self.drum.pending()])

    @rule(buffer_ops=st.sampled_from([2, 3, 5, 7, 12]),
          payload_bytes=st.sampled_from([30, 120, 400]),
          window=st.sampled_from([4, 6, 8, 12]))
    def restore_resized(self, buffer_ops: int, payload_bytes: int, window: int) -> None:
        """A restore of the current state with other buffer sizes (and due window: it is
        derived, never stored), as after a change of configuration between two runs: the
        journal may hold more than the new buffer."""
        if self.drum.buffered > buffer_ops:
            event("restored with more journal than buffer")
        self.config = replace(self.config, buffer_ops=buffer_ops,
                              buffer_payload_bytes=payload_bytes,
                              due=replace(self.config.due, window_urls=window))
        self._restore(self.drum.manifest_bytes(), list(self.journal))

    @precondition(lambda self: self.drum.buffered > 0)
    @rule(budget=st.integers(0, 200), mode=st.sampled_from(["minor", "major", "select"]))
    def disk_full(self, budget: int, mode: str) -> None:
        before = (self.drum.manifest_bytes(), self.drum.pending())
        self.opener.fail_after = budget
        try:
            with pytest.raises(DrumWriteError, match="ENOSPC|disk full"):
                self.drum.merge(now_ms=self.now, major=mode == "major",
                                select=mode == "select")
        finally:
            self.opener.fail_after = None
        assert (self.drum.manifest_bytes(), self.drum.pending()) == before

    # -- invariants

    @invariant()
    def consistent(self) -> None:
        for name in self.drum.window_stats:
            event(f"due window: {name}")
        self.drum._check()
        assert self.drum.next_seq == self.model.next_seq
        assert len(self.drum) == len(self.model.live) + len(self.model.archived)
        live: dict[int, dict] = {}
        archived: dict[int, dict] = {}
        payload_records = []
        for keys, values, is_archived in self.drum.items():
            target = archived if is_archived else live
            for key, value in zip(keys.tolist(), values, strict=True):
                target[key] = record_dict(value)
            payload_records.append((keys, values))
        assert {k: strip(v) for k, v in live.items()} == {
            k: strip(v) for k, v in self.model.live.items()
        }
        assert {k: strip(v) for k, v in archived.items()} == {
            k: strip(v) for k, v in self.model.archived.items()
        }
        for keys, values in payload_records:
            got = self.drum.read_payloads(values)
            assert got == [self.model.payloads[k] for k in keys.tolist()]


class WindowedDrumMachine(DrumMachine):
    """Selections from a due window, on 16 keys (so that few records are held: a window of a
    few records is built, cut at a horizon, kept by minor merges and given up), with rules that
    retire URLs, announce them and fetch them again."""

    CONFIG = WINDOWED
    KEYS = KEYS[:16]
    # Left to DrumMachine, so that the window's cases come more often here.
    check = checkpoint = fail_and_restore = reopen_same = disk_full = None

    @rule(picks=keys_st, fetched=st.integers(-4, -1))
    def retire(self, picks: list[int], fetched: int) -> None:
        """URLs fetched and never due again (the window does not hold them)."""
        keys = self._keys(picks)
        values = outcomes(len(keys), status=DrumStatus.FETCHED, at_ms=self.now,
                          http_status=200, host=self._host(keys))
        values["recrawl_s"] = self.now // 1000 + fetched
        values["interval_s"] = 60
        self.model.add(2, keys, values, None)
        self._results(self.drum.update(keys, values, now_ms=self.now))

    @rule(picks=keys_st, later=st.integers(100, 3000), fetched=seconds_st)
    def reschedule(self, picks: list[int], later: int, fetched: int | None) -> None:
        """URLs fetched and due again in a while (after the window's horizon, mostly), with
        recrawl fields or without (``fetched`` None)."""
        keys = self._keys(picks)
        values = outcomes(len(keys), status=DrumStatus.FETCHED, at_ms=self.now,
                          http_status=200, host=self._host(keys), next_fetch_ms=self.now + later)
        if fetched is not None:
            values["recrawl_s"] = self.now // 1000 + fetched
            values["interval_s"] = 60
        self.model.add(2, keys, values, None)
        self._results(self.drum.update(keys, values, now_ms=self.now))

    @rule()
    def select(self) -> None:
        """A release, from the window while it lasts."""
        self._results([self.drum.merge(now_ms=self.now, select=True)])

    @rule(picks=keys_st, announced=st.integers(-2, 0))
    def announce(self, picks: list[int], announced: int) -> None:
        """A sitemap announces new content of URLs (as a discovery of them)."""
        keys = self._keys(picks)
        values = discoveries(len(keys), now_ms=self.now, host=self._host(keys),
                             announced_s=self.now // 1000 + announced)
        payloads = [payload_of(k) for k in keys]
        self.model.add(3, keys, values, payloads)
        self._results(self.drum.check_update(keys, values, payloads, now_ms=self.now))


DrumMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
WindowedDrumMachine.TestCase.settings = settings(
    DrumMachine.TestCase.settings, max_examples=30, stateful_step_count=80
)
TestDrumStateful = DrumMachine.TestCase
TestWindowedDrumStateful = WindowedDrumMachine.TestCase


def test_record_dtype_is_136_bytes() -> None:
    assert RECORD.itemsize == 136
