"""Flink's operator ids of uids, against the ids a savepoint that Flink wrote holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from job.operator_ids import holds_state_of, murmur3_128, operator_id

#: A savepoint's ``_metadata`` written by Flink (an earlier version of the crawl's job).
METADATA = Path(__file__).parent / "data" / "file-source-savepoint-metadata"


@pytest.mark.parametrize(("uid", "expected"), [
    # As Flink wrote them into METADATA.
    ("crawl-db", "c5b159ef5495e90b552d327fb1bc7d18"),
    ("fetch", "beae982976b0b45a8411606051216c9b"),
    ("process", "4cd5c9eb987d451c700e0079a82c6902"),
    ("near-duplicates", "4a18544e8f5c54e82ff6f14977627be7"),
])
def test_the_id_of_a_uid_is_the_one_flink_writes(uid: str, expected: str) -> None:
    assert operator_id(uid).hex() == expected
    assert bytes.fromhex(expected) in METADATA.read_bytes()


def test_the_hash_covers_blocks_and_every_tail_length() -> None:
    # MurmurHash3_x64_128 with seed 0 of nothing is zeros; every length gives its own hash.
    assert murmur3_128(b"") == bytes(16)
    hashes = {murmur3_128(bytes(range(n))) for n in range(40)}
    assert len(hashes) == 40


def test_a_checkpoint_holds_the_state_of_the_operators_it_lists(tmp_path: Path) -> None:
    (tmp_path / "_metadata").write_bytes(METADATA.read_bytes())
    assert holds_state_of(tmp_path, "near-duplicates")
    assert not holds_state_of(tmp_path, "neardup-index")
    assert not holds_state_of(tmp_path / "missing", "crawl-db")
