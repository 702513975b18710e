"""DRUM files: bad input fails loudly naming the file; archived and compacted sets stay seen;
restore and garbage collection keep what a retained manifest needs."""

from __future__ import annotations

import errno
import json
import os
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from drum import (
    ArchivePolicy,
    Drum,
    DrumConfig,
    DrumCorruptError,
    DrumManifestError,
    DrumMissingFileError,
    DrumWriteError,
    DuePolicy,
    Manifest,
    ManifestHistory,
    checksum,
    discoveries,
    referenced_files,
    url_keys,
)
from drum.files import (
    _RUN_HEADER,
    _RUN_TRAILER,
    _TABLE,
    HEADER_SIZE,
    KIND_DELTA,
    ROWS,
    FileInfo,
    PayloadFile,
    PayloadWriter,
    RunFile,
    RunWriter,
    default_opener,
    encode_values,
)
from drum.journal import decode_ops
from drum.merge import pack_plan
from drum.record import READABLE_LAYOUTS, RECORD, neutral, record_dict

SMALL = DrumConfig(buffer_ops=50, block_records=8, max_deltas=3, fsync=False)


def urls(start: int, count: int) -> list[bytes]:
    return [f"http://h{i % 5}.example/p{i}".encode() for i in range(start, start + count)]


def fill(drum: Drum, start: int, count: int, now: int = 1_000) -> None:
    batch = urls(start, count)
    drum.check_update(url_keys(batch), discoveries(count, now_ms=now), batch, now_ms=now)


@pytest.fixture
def drum(tmp_path: Path) -> Drum:
    db = Drum.create(str(tmp_path / "d"), SMALL)
    fill(db, 0, 120)
    db.merge(now_ms=2_000, major=True)
    fill(db, 100, 40)
    db.merge(now_ms=3_000)
    yield db
    db.close()


def files_of(db: Drum, prefix: str) -> list[Path]:
    return [Path(db.directory) / n for n in sorted(referenced_files(db.manifest))
            if n.startswith(prefix)]


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


# -- checksums and formats


def test_checksum_is_crc32() -> None:
    data = bytes(range(256)) * 100
    assert checksum(data) == zlib.crc32(data)
    assert checksum(np.arange(10, dtype=np.uint64)) == zlib.crc32(np.arange(10).tobytes())


def test_payload_pages_carry_zlibs_crc32(tmp_path: Path) -> None:
    # The files of a crawl DB written before the checksums were computed by zlib-ng hold
    # zlib's values: the same in both directions, page by page, whatever the pieces appended.
    data = bytes(range(256)) * 50 + b"tail"
    writer = PayloadWriter(str(tmp_path / "pay"), default_opener, fsync=False)
    for start in range(0, len(data), 3000):
        writer.append(data[start:start + 3000])
    writer.finish()
    segment = PayloadFile(str(tmp_path / "pay"))
    pages = [data[at:at + segment.page] for at in range(0, len(data), segment.page)]
    assert [int(value) for value in segment.pages] == [zlib.crc32(page) for page in pages]
    assert segment.read(4000, len(data) - 4000) == data[4000:]
    segment.verify()
    segment.close()


def test_run_block_corruption_names_file_and_block(drum: Drum) -> None:
    main = files_of(drum, "run-")[0]
    manifest = drum.manifest_bytes()
    drum.close()
    flip_byte(main, 32 + 8 * 3)  # a key of block 0
    db = Drum.restore(str(main.parent), manifest, config=SMALL)  # header and table are fine
    with pytest.raises(DrumCorruptError, match=rf"{main.name}.*keys checksum mismatch in block 0"):
        fill(db, 0, 60)  # a merge reads the keys
    with pytest.raises(DrumCorruptError, match=main.name):
        Drum.restore(str(main.parent), manifest, config=SMALL, verify=True)


def test_value_corruption_found_by_verify_and_by_major_merge(drum: Drum) -> None:
    main = Path(drum.directory) / drum.manifest.main.name
    manifest = drum.manifest_bytes()
    drum.close()
    flip_byte(main, 32 + 8 * 8 + 5)  # a value of block 0
    with pytest.raises(DrumCorruptError, match=rf"{main.name}.*values checksum mismatch"):
        Drum.restore(str(main.parent), manifest, config=SMALL, verify=True)
    db = Drum.restore(str(main.parent), manifest, config=SMALL)
    with pytest.raises(DrumCorruptError, match=main.name):
        db.merge(now_ms=5_000, major=True)


def _written(tmp_path: Path, name: str, keys: np.ndarray, values: np.ndarray) -> RunFile:
    writer = RunWriter(str(tmp_path / name), KIND_DELTA, block_records=100,
                       opener=default_opener, fsync=False)
    writer.append(keys, values)
    writer.close()
    return RunFile(str(tmp_path / name))


def test_a_block_of_discoveries_is_written_as_its_nonzero_fields_and_read_back(
    tmp_path: Path,
) -> None:
    """A discovery sets 9 of the record's fields: its block takes 8 + 45 bytes a record, not
    8 + 136, and reads back as the same records; one record with every field set makes its
    block whole records again (columns would save too little)."""
    keys = np.arange(1, 251, dtype=np.uint64) * 7
    values = discoveries(250, now_ms=np.arange(250) + 5_000, score=1.5, depth=3, host=99)
    values["payload_pos"], values["payload_len"] = np.arange(250) * 40, 40
    values[120] = np.frombuffer(bytes(range(1, RECORD.itemsize + 1)), dtype=RECORD)[0]
    run = _written(tmp_path, "run-1.drum", keys, values)
    set_fields = ["discovered_ms", "status_ms", "next_fetch_ms", "score", "host",
                  "payload_pos", "depth", "payload_len", "status"]
    mask = sum(1 << RECORD.names.index(name) for name in set_fields)
    assert run.table["fields"].tolist() == [mask, ROWS, mask]
    assert run.size == 32 + 150 * (8 + 45) + 100 * (8 + RECORD.itemsize) + 3 * 48 + 48
    read = [run.read_block(block) for block in range(run.blocks)]
    assert np.concatenate([k for k, _ in read]).tolist() == keys.tolist()
    assert np.concatenate([v for _, v in read]).tobytes() == values.tobytes()
    run.close()


@pytest.mark.parametrize("count", [1, 63, 64, 65, 200, 1000])
def test_a_block_keeps_exactly_the_fields_set_in_some_record(count: int) -> None:
    rng = np.random.default_rng(count)
    for field in RECORD.names:
        values = discoveries(count, now_ms=0, score=0.0, depth=0)
        values["status"] = 0
        one = int(rng.integers(count))
        values[one : one + 1].view(np.uint8)[RECORD.fields[field][1]] = 1
        fields, data = encode_values(values)
        assert fields == 1 << RECORD.names.index(field)
        assert len(data) == count * RECORD.fields[field][0].itemsize


def test_a_block_table_naming_fields_the_layout_lacks_is_refused(tmp_path: Path) -> None:
    run = _written(tmp_path, "run-1.drum", np.array([3, 9], dtype=np.uint64),
                   discoveries(2, now_ms=1_000))
    run.close()
    path = tmp_path / "run-1.drum"
    data = bytearray(path.read_bytes())
    table_offset, blocks, records, _ = _RUN_TRAILER.unpack_from(data, len(data) - 48)
    table = np.frombuffer(data, _TABLE, blocks, table_offset).copy()
    table["fields"] |= 1 << len(RECORD.names)
    table_bytes = table.tobytes()
    data[table_offset : table_offset + len(table_bytes)] = table_bytes
    trailer = _RUN_TRAILER.pack(table_offset, blocks, records, checksum(table_bytes))
    data[-48:] = trailer + checksum(trailer).to_bytes(8, "little") + b"DRUMEND1"
    path.write_bytes(bytes(data))
    with pytest.raises(DrumCorruptError, match=r"run-1.drum.*fields 0x.* beyond the layout"):
        RunFile(str(path))


@pytest.mark.parametrize("cut", [1, 47, 48, 100, 5000])
def test_truncated_run_is_refused(drum: Drum, cut: int) -> None:
    main = Path(drum.directory) / drum.manifest.main.name
    manifest = drum.manifest_bytes()
    drum.close()
    data = main.read_bytes()
    main.write_bytes(data[: max(len(data) - cut, 0)])
    with pytest.raises(DrumCorruptError, match=main.name):
        Drum.restore(str(main.parent), manifest, config=SMALL)


def test_truncated_and_corrupt_payload_segment(drum: Drum) -> None:
    segment = files_of(drum, "pay-")[0]
    manifest = drum.manifest_bytes()
    drum.close()
    original = segment.read_bytes()
    segment.write_bytes(original[:-3])
    with pytest.raises(DrumCorruptError, match=rf"{segment.name}.*(truncated|end marker)"):
        Drum.restore(str(segment.parent), manifest, config=SMALL)
    segment.write_bytes(original)
    flip_byte(segment, 40)  # inside the first URL
    with pytest.raises(DrumCorruptError, match=rf"{segment.name}.*page 0 checksum"):
        Drum.restore(str(segment.parent), manifest, config=SMALL, verify=True)
    db = Drum.restore(str(segment.parent), manifest, config=SMALL)
    values = np.concatenate([v for _, v, _ in db.items()])
    with pytest.raises(DrumCorruptError, match=rf"{segment.name}.*page 0 checksum mismatch"):
        db.read_payloads(values)


def test_missing_file_named_by_manifest(drum: Drum) -> None:
    manifest = drum.manifest_bytes()
    for victim in files_of(drum, "run-")[:1] + files_of(drum, "pay-")[:1]:
        saved = victim.read_bytes()
        victim.unlink()
        with pytest.raises(DrumMissingFileError, match=rf"{victim.name}.*missing"):
            Drum.restore(drum.directory, manifest, config=SMALL)
        victim.write_bytes(saved)
    Drum.restore(drum.directory, manifest, config=SMALL).close()


def test_manifest_refuses_other_versions_and_garbage() -> None:
    good = Manifest().to_json()
    assert Manifest.from_json(good) == Manifest()
    with pytest.raises(DrumManifestError, match="unsupported manifest version 9"):
        Manifest.from_json({**good, "version": 9})
    with pytest.raises(DrumManifestError, match="not valid JSON"):
        Manifest.from_bytes(b"{nope")
    with pytest.raises(DrumManifestError, match="malformed"):
        Manifest.from_json({**good, "main": [1]})


def _as_layout(path: Path, layout: int) -> FileInfo:
    """Rewrite a run file as an earlier version wrote it (format 1: whole records, of the
    layout's size: the first bytes of each current record) and return what a manifest records
    of it."""
    width = READABLE_LAYOUTS[layout]
    data = path.read_bytes()
    magic, _, _, kind, _, block_records, reserved = _RUN_HEADER.unpack_from(data)
    table_offset, blocks, records, _ = _RUN_TRAILER.unpack_from(data, len(data) - 48)
    table = np.frombuffer(data, _TABLE, blocks, table_offset).copy()
    head = _RUN_HEADER.pack(magic, 1, layout, kind, width, block_records, reserved)
    out = bytearray(head + checksum(head).to_bytes(8, "little"))
    run = RunFile(str(path))
    for block, entry in enumerate(table):
        keys, values = run.read_block(block)
        narrow = np.ascontiguousarray(values).view(np.uint8).reshape(-1, RECORD.itemsize)
        narrow = narrow[:, :width].tobytes()
        entry["offset"] = len(out)
        entry["fields"] = 0
        entry["values_sum"] = checksum(narrow)
        out += keys.tobytes() + narrow
    run.close()
    table_bytes = table.tobytes()
    new_offset = len(out)
    out += table_bytes
    trailer = _RUN_TRAILER.pack(new_offset, blocks, records, checksum(table_bytes))
    out += trailer + checksum(trailer).to_bytes(8, "little") + b"DRUMEND1"
    path.write_bytes(bytes(out))
    assert HEADER_SIZE == 32
    return FileInfo(path.name, len(out), records, checksum(table_bytes))


@pytest.mark.parametrize("layout", [2, 3, 4])
def test_a_crawl_db_of_an_earlier_layout_is_read_and_carried_on(drum: Drum, layout: int) -> None:
    """The files of a crawl begun before the recrawl fields (layout 2) or the announcements
    (layout 3) existed, or before blocks were written as columns (run format 1): each record
    reads as its fields of that layout, the newer ones empty, and merges go on writing the
    current layout."""
    keys, values, _ = next(iter(drum.items()))
    recrawled = neutral(1)
    recrawled["recrawl_s"], recrawled["interval_s"], recrawled["etag"] = 30, 600, b"tag"
    recrawled["announced_s"] = 25
    drum.update(keys[:1], recrawled, now_ms=3_500)
    drum.merge(now_ms=3_500, major=True)
    before = {int(k): record_dict(v) for keys, values, _ in drum.items() for k, v in
              zip(keys, values, strict=True)}
    manifest = drum.manifest.to_json()
    drum.close()
    directory = Path(drum.directory)
    for name in ("main", "deltas", "archives"):
        entries = manifest[name] if name != "main" else [manifest["main"]]
        converted = [_as_layout(directory / entry[0], layout).to_json()
                     for entry in entries if entry]
        manifest[name] = converted if name != "main" else converted[0]
    manifest["layout"] = layout
    manifest["version"] = 2  # (those crawls' manifests had no checksum)
    width = READABLE_LAYOUTS[layout]
    kept = [name for name in RECORD.names if RECORD.fields[name][1] < width]
    old = Drum.restore(str(directory), json.dumps(manifest).encode(), (), SMALL)
    after = {int(k): record_dict(v) for keys, values, _ in old.items() for k, v in
             zip(keys, values, strict=True)}
    assert after.keys() == before.keys()
    assert before[int(keys[0])]["announced_s"] == 25
    assert before[int(keys[0])]["recrawl_s"] == 30
    for key, record in after.items():
        assert all(record[field] in (0, b"") for field in RECORD.names if field not in kept)
        assert {f: record[f] for f in kept} == {f: before[key][f] for f in kept}
    fill(old, 200, 30)
    old.merge(now_ms=4_000, major=True)
    checks = old.check(url_keys(urls(0, 140) + urls(200, 30)), now_ms=5_000)
    checks += [old.merge(now_ms=5_000)]
    assert all(result.checks.seen.all() for result in checks if len(result.checks.keys))
    old.close()


def test_manifest_size_mismatch_is_refused(drum: Drum) -> None:
    value = json.loads(drum.manifest_bytes())
    value["main"][1] += 1
    with pytest.raises(DrumCorruptError, match="size .* differs from the manifest"):
        Drum.restore(drum.directory, value, config=SMALL)


def test_journal_chunk_damage_is_refused(drum: Drum) -> None:
    fill(drum, 500, 10)
    data = bytearray(drum.take_journal().data)
    assert len(decode_ops(bytes(data))[1]) == 10
    data[30] ^= 1
    with pytest.raises(DrumCorruptError, match="pending chunk 0: journal chunk checksum"):
        Drum.restore(drum.directory, drum.manifest_bytes(), [bytes(data)], config=SMALL)
    with pytest.raises(DrumCorruptError, match="truncated"):
        decode_ops(b"xx")


# -- full disk


class FullDiskAfter:
    """Opener whose files accept ``budget`` bytes in all, then raise ENOSPC."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.paths: list[str] = []

    def __call__(self, path: str):
        self.paths.append(path)
        handle = open(path, "xb")  # noqa: SIM115
        opener = self

        class Limited:
            def write(self, data) -> int:
                data = bytes(data)
                if len(data) > opener.budget:
                    raise OSError(errno.ENOSPC, "No space left on device")
                opener.budget -= len(data)
                return handle.write(data)

            def flush(self) -> None:
                handle.flush()

            def fileno(self) -> int:
                return handle.fileno()

            def close(self) -> None:
                handle.close()

        return Limited()


@pytest.mark.parametrize("budget", [0, 100, 2_000, 6_000])
def test_full_disk_loses_nothing(tmp_path: Path, budget: int) -> None:
    directory = str(tmp_path / "d")
    opener = FullDiskAfter(10**9)
    db = Drum.create(directory, SMALL, opener=opener)
    fill(db, 0, 120)
    fill(db, 1000, 20)
    assert db.buffered == 40
    before_files = set(os.listdir(directory))
    before = (db.manifest_bytes(), db.pending())
    opener.budget = budget
    with pytest.raises(DrumWriteError, match=r"\.(drum|json): write failed: disk full \(ENOSPC\)"):
        db.merge(now_ms=5_000, major=True)
    assert (db.manifest_bytes(), db.pending()) == before  # nothing changed
    assert set(os.listdir(directory)) == before_files  # partial files removed
    opener.budget = 10**9
    result = db.merge(now_ms=5_000, major=True)
    assert len(result.new.keys) == 40
    db._check()
    assert len(db) == 140


def test_create_failure_is_a_write_error(tmp_path: Path) -> None:
    def refuse(path: str):
        raise OSError(errno.EACCES, "Permission denied")

    db = Drum.create(str(tmp_path / "d"), SMALL, opener=refuse)
    fill(db, 0, 3)
    with pytest.raises(DrumWriteError, match="cannot create: Permission denied"):
        db.merge(now_ms=1)


# -- archived and compacted sets


def test_archived_and_compacted_sets_keep_every_url_seen(tmp_path: Path) -> None:
    config = DrumConfig(
        buffer_ops=64, block_records=16, max_deltas=2, max_archives=2, fsync=False,
        archive=ArchivePolicy(min_score=1.0),
        due=DuePolicy(max_urls=0),
    )
    db = Drum.create(str(tmp_path / "d"), config)
    all_urls: list[bytes] = []
    for round_no in range(6):
        batch = urls(round_no * 100, 100)
        all_urls += batch
        values = discoveries(100, now_ms=round_no, score=0.5)  # below min_score: archived
        db.check_update(url_keys(batch), values, batch, now_ms=round_no)
        db.merge(now_ms=round_no, major=True)
        db._check()
    c = db.counters
    assert (c.archived, c.keys) == (600, 600)
    assert c.compactions >= 1
    assert len(db.manifest.archives) <= 2
    assert db.manifest.main is None
    db.check(url_keys(all_urls), now_ms=10)
    result = db.merge(now_ms=10)
    assert result.checks.seen.all()
    # updates to archived keys are dropped and counted, never silently
    db.update(url_keys(all_urls[:5]), discoveries(5, now_ms=11, score=9.0), now_ms=11)
    assert db.merge(now_ms=11).dropped_updates == 5
    assert db.counters.dropped_updates == 5
    archived = {k for keys, _, arch in db.items() if arch for k in keys.tolist()}
    assert archived == set(url_keys(all_urls).tolist())
    got = sorted(p for _, v, _ in db.items() for p in db.read_payloads(v))
    assert got == sorted(all_urls)


def test_a_key_found_in_the_main_run_is_not_looked_up_in_the_delta_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Most keys a batch updates are in the main run: a minor merge searches the delta runs
    (and archived sets) only for the keys no earlier run holds."""
    drum = Drum.create(str(tmp_path / "d"), replace(SMALL, max_deltas=8, major_ratio=4.0))
    fill(drum, 0, 120)
    drum.merge(now_ms=2_000, major=True)
    fill(drum, 100, 40)
    drum.merge(now_ms=3_000)
    main = drum.manifest.main.name
    deltas = {d.name for d in drum.manifest.deltas}
    assert deltas
    read: list[str] = []
    real = RunFile.read_keys

    def read_keys(run: RunFile, block: int) -> np.ndarray:
        read.append(os.path.basename(run.path))
        return real(run, block)

    monkeypatch.setattr(RunFile, "read_keys", read_keys)
    in_main = urls(0, 60)
    drum.check(url_keys(in_main), now_ms=4_000)
    assert drum.merge(now_ms=4_000).checks.seen.all()
    assert set(read) == {main}
    read.clear()
    in_delta, unknown = urls(125, 10), urls(500, 10)
    results = [*drum.check(url_keys(in_main + in_delta + unknown), now_ms=5_000),
               drum.merge(now_ms=5_000)]  # (the buffer holds 50 operations)
    seen = np.concatenate([result.checks.seen for result in results])
    assert seen.tolist() == [True] * 70 + [False] * 10
    assert set(read) & deltas
    drum.close()


# -- restore and garbage collection


def test_restore_from_retained_checkpoint_after_gc(tmp_path: Path) -> None:
    directory = str(tmp_path / "d")
    db = Drum.create(directory, SMALL)
    fill(db, 0, 70)
    checkpoint = (db.manifest_bytes(), [db.pending()])
    seen_then = sorted(k for keys, _, _ in db.items() for k in keys.tolist())
    for i in range(5):
        fill(db, 1000 + 100 * i, 90)
        db.merge(now_ms=9_000, major=i % 2 == 0)
    deleted = db.collect_garbage([checkpoint[0]])
    assert deleted  # files of intermediate merges went
    still = referenced_files(checkpoint[0]) | referenced_files(db.manifest)
    assert still <= set(os.listdir(directory))
    old = Drum.restore(directory, *checkpoint, config=SMALL, verify=True)
    old._check()
    assert sorted(k for keys, _, _ in old.items() for k in keys.tolist()) == seen_then
    assert old.buffered == 20
    result = old.merge(now_ms=10_000)
    assert len(result.new.keys) == 20
    old._check()
    db._check()  # the newer DRUM is untouched by the older one's merge
    old.close()
    # without the checkpoint among the retained manifests, its files go
    db.collect_garbage([])
    with pytest.raises(DrumMissingFileError):
        Drum.restore(directory, *checkpoint, config=SMALL)
    db.close()


def test_open_reads_the_newest_manifest_file(tmp_path: Path) -> None:
    directory = str(tmp_path / "d")
    db = Drum.create(directory, SMALL)
    fill(db, 0, 120)
    db.merge(now_ms=1)
    manifest = db.manifest
    db.close()
    again = Drum.open(directory, SMALL)
    assert again.manifest == manifest
    again._check()
    with pytest.raises(DrumManifestError, match="already holds a DRUM"):
        Drum.create(directory, SMALL)
    with pytest.raises(DrumManifestError, match="no DRUM manifest"):
        Drum.open(str(tmp_path / "empty"), SMALL)


def test_gc_leaves_foreign_files_alone(drum: Drum) -> None:
    foreign = Path(drum.directory) / "notes.txt"
    foreign.write_text("mine")
    drum.collect_garbage()
    assert foreign.exists()
    assert set(os.listdir(drum.directory)) == referenced_files(drum.manifest) | {"notes.txt"}


def test_manifest_history_keeps_the_window(tmp_path: Path) -> None:
    directory = str(tmp_path / "d")
    db = Drum.create(directory, SMALL)
    history = ManifestHistory(window_ms=100)
    kept = {}
    for step in range(6):
        old = db.manifest_bytes()
        fill(db, 1000 * step, 60)  # one merge per step
        history.replaced(old, db.manifest_bytes(), now_ms=step * 50)
        kept[step] = old
        db.collect_garbage(keep=history.retained(now_ms=step * 50))
    restored = ManifestHistory.from_json(json.loads(json.dumps(history.to_json())))
    names = restored.retained(now_ms=250)
    assert [t for t, _ in restored.entries] == [150, 200, 250]
    assert referenced_files(kept[3]) <= names | referenced_files(db.manifest)
    assert not referenced_files(kept[1]) <= names | referenced_files(db.manifest)
    with pytest.raises(DrumManifestError):
        ManifestHistory.from_json({"version": 1, "window_ms": 5, "entries": []})
    damaged = json.loads(json.dumps(history.to_json()))
    damaged["entries"][0][0] += 1
    with pytest.raises(DrumCorruptError, match="manifest history: checksum mismatch"):
        ManifestHistory.from_json(damaged)
    earlier = {k: v for k, v in history.to_json().items() if k != "checksum"}
    earlier["version"] = 2  # (written before histories had a checksum)
    assert ManifestHistory.from_json(earlier).entries == history.entries
    for step in (3, 4, 5):  # still restorable
        Drum.restore(directory, kept[step], config=SMALL).close()
    with pytest.raises(DrumMissingFileError):
        Drum.restore(directory, kept[1], config=SMALL)
    db.close()


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        ([], 0),
        ([10] * 3, 0),  # fewer than the fanout
        ([10] * 4, 4),  # four of class 0 (< 4 x 100 bytes)
        ([1000, 10, 10, 10], 0),  # classes differ
        ([5000, 10, 10, 10, 10], 4),  # the newest four only
        ([400, 1500, 399, 1599], 0),  # class 1 is [400, 1600)
        ([400, 1500, 450, 1599], 4),
    ],
)
def test_pack_plan_is_size_tiered(sizes: list[int], expected: int) -> None:
    assert pack_plan(sizes, fanout=4, base_bytes=100) == expected


def test_payload_files_stay_few_and_every_url_stays_readable(tmp_path: Path) -> None:
    """Hundreds of small merges: the payload files are packed, size-tiered, so there are few;
    every URL reads back, also through a manifest from before the packing (files are kept
    until garbage collection is told they are unused)."""
    config = replace(SMALL, max_deltas=1000, major_ratio=1000.0, payload_pack_fanout=4,
                     payload_pack_base_bytes=64)
    db = Drum.create(str(tmp_path / "d"), config)
    early_manifest = None
    for step in range(300):
        fill(db, 3 * step, 3)
        db.merge(now_ms=1_000 + step)
        if step == 40:
            early_manifest = db.manifest_bytes()
    db._check()
    counters = db.counters
    assert counters.payload_packs > 50
    files = len(db.manifest.payloads)
    assert files <= 4 * 6, files  # under fanout per size class
    # A major merge hands out URLs read through the packed files.
    result = db.merge(now_ms=10_000, major=True)
    expected = {url_keys([u])[0]: u for u in urls(0, 900)}
    assert {int(k): p for k, p in zip(result.due.keys, result.due.payloads, strict=True)} == {
        int(k): expected[int(k)] for k in result.due.keys
    }
    # Every record's payload, read through the current manifest.
    seen = 0
    for keys, values, _ in db.items():
        for key, payload in zip(keys.tolist(), db.read_payloads(values), strict=True):
            assert payload == expected[key]
            seen += 1
    assert seen == 900
    # The early manifest still restores: packing removed nothing.
    early = Drum.restore(db.directory, early_manifest, config=config, verify=True)
    assert len(early) == 123
    early.close()
    # Once nothing refers to them, the packed-away files are deleted and the DRUM is whole.
    deleted = db.collect_garbage()
    assert any(name.startswith("pay-") for name in deleted)
    db._check()
    db.close()


def test_a_restore_with_a_smaller_buffer_answers_every_operation_once(tmp_path: Path) -> None:
    """A journal holding more operations than the restored DRUM's buffer (``buffer_ops``
    lowered between two runs): the next operation merges them first, each answered once."""
    directory = str(tmp_path / "d")
    db = Drum.create(directory, replace(SMALL, buffer_ops=100))
    db.check(url_keys(urls(0, 60)), now_ms=1)
    checkpoint = (db.manifest_bytes(), [db.pending()])
    db.close()
    small = replace(SMALL, buffer_ops=8)
    db = Drum.restore(directory, *checkpoint, config=small)
    assert db.buffered == 60
    results = db.check(url_keys(urls(60, 10)), now_ms=2)
    results.append(db.merge(now_ms=3))
    assert np.concatenate([r.checks.seq for r in results]).tolist() == list(range(70))
    assert db.next_seq == 70
    assert db.buffered == 0
    db._check()
    db.close()


def test_open_after_a_restore_of_an_older_manifest_loads_the_restored_drum(tmp_path: Path) -> None:
    """A restore to an earlier manifest abandons the later ones (their files stay until garbage
    collection): Drum.open must load the restored DRUM, and then what it merged, not them."""
    directory = str(tmp_path / "d")
    db = Drum.create(directory, SMALL)
    fill(db, 0, 40)
    db.merge(now_ms=1)
    checkpoint = db.manifest_bytes()
    for step in range(3):  # abandoned below
        fill(db, 1000 + 100 * step, 40)
        db.merge(now_ms=2 + step)
    db.close()
    Drum.restore(directory, checkpoint, (), SMALL).close()
    again = Drum.open(directory, SMALL)
    assert len(again) == 40
    fill(again, 500, 30)
    again.merge(now_ms=10)
    again.close()
    final = Drum.open(directory, SMALL)
    assert len(final) == 70
    results = final.check(url_keys(urls(0, 40) + urls(500, 30) + urls(1000, 40)), now_ms=11)
    results.append(final.merge(now_ms=11))
    seen = np.concatenate([r.checks.seen for r in results]).tolist()
    assert seen == [True] * 70 + [False] * 40
    final._check()
    final.close()


def test_an_edited_manifest_is_refused(tmp_path: Path) -> None:
    """The manifest, as a file and as the bytes kept in state, carries its checksum: an edited
    counter, or a manifest of this version without its checksum, is refused naming it."""
    directory = Path(tmp_path / "d")
    db = Drum.create(str(directory), SMALL)
    fill(db, 0, 40)
    db.merge(now_ms=1)
    state = db.manifest_bytes()
    path = directory / db.manifest.file_name
    db.close()
    assert path.read_bytes() == state
    edited = state.replace(b'"merges":1', b'"merges":2')
    assert edited != state
    path.write_bytes(edited)
    with pytest.raises(DrumCorruptError, match=rf"{path.name}: manifest checksum mismatch"):
        Drum.open(str(directory), SMALL)
    with pytest.raises(DrumCorruptError, match="manifest checksum mismatch"):
        Drum.restore(str(directory), edited, (), SMALL)
    with pytest.raises(DrumCorruptError, match="manifest checksum mismatch"):
        referenced_files(edited)  # (garbage collection reads manifests too)
    value = json.loads(state)
    del value["checksum"]
    with pytest.raises(DrumCorruptError, match="no checksum"):
        Drum.restore(str(directory), json.dumps(value).encode(), (), SMALL)


def test_a_manifest_of_the_previous_version_is_read(tmp_path: Path) -> None:
    """Manifests written before they had a checksum (version 2), in state or as files, are
    read; the next merge writes the current version."""
    directory = Path(tmp_path / "d")
    db = Drum.create(str(directory), SMALL)
    fill(db, 0, 40)
    db.merge(now_ms=1)
    value = json.loads(db.manifest_bytes())
    path = directory / db.manifest.file_name
    db.close()
    del value["checksum"]
    value["version"] = 2
    previous = json.dumps(value, separators=(",", ":")).encode()
    path.write_bytes(previous)
    for again in (Drum.restore(str(directory), previous, (), SMALL), Drum.open(str(directory))):
        assert len(again) == 40
        again.close()
    again = Drum.open(str(directory), SMALL)
    fill(again, 100, 10)
    again.merge(now_ms=2)
    assert json.loads(again.manifest_bytes())["version"] == 3
    again.close()
    assert len(Drum.open(str(directory), SMALL)) == 50


def test_a_payload_file_of_another_length_than_the_manifest_says_is_refused(drum: Drum) -> None:
    value = drum.manifest.to_json()
    value["payloads"][0][3] += 1  # [start, name, size, records (its length), checksum]
    with pytest.raises(DrumCorruptError, match=rf"{value['payloads'][0][1]}.*differ"):
        Drum.restore(drum.directory, value, config=SMALL)
