"""The per-host FIFO over a map store: order, push_front, bounds round trip, a randomised
comparison with ``collections.deque``, and the queue entries (with their attempt counts)."""

from __future__ import annotations

import collections
import json
import random

import pytest

from crawl.fetch_requests import QueueEntry, decode_batch, decode_entries, encode_batch
from crawl.frontier.host_queue import DictStore, HostQueue


def _check(queue: HostQueue, store: DictStore, model: collections.deque[str]) -> None:
    """The queue's invariants: bounds, length, and no entry outside the bounds."""
    head, tail = queue.bounds
    assert head <= tail
    assert len(queue) == len(model) == tail - head
    assert all(head <= key < tail for key in store.data)
    assert [store.data[key] for key in range(head, tail)] == list(model)


def test_new_queue_is_empty() -> None:
    queue = HostQueue(DictStore())

    assert len(queue) == 0
    assert queue.bounds == (0, 0)
    assert queue.pop() is None


def test_fifo_order() -> None:
    queue = HostQueue(DictStore())
    for n in range(5):
        queue.push(f"u{n}")

    assert [queue.pop() for _ in range(6)] == ["u0", "u1", "u2", "u3", "u4", None]


def test_pop_on_empty_changes_nothing() -> None:
    store = DictStore()
    queue = HostQueue(store, 7, 7)

    assert queue.pop() is None
    assert queue.pop() is None
    assert queue.bounds == (7, 7)
    assert store.data == {}


def test_pop_removes_the_entry_from_the_store() -> None:
    store = DictStore()
    queue = HostQueue(store)
    queue.push("a")
    queue.push("b")

    queue.pop()

    assert store.data == {1: "b"}
    assert queue.bounds == (1, 2)


def test_push_front_comes_out_first() -> None:
    queue = HostQueue(DictStore())
    queue.push("a")
    queue.push("b")

    queue.push_front("retry")

    assert len(queue) == 3
    assert [queue.pop(), queue.pop(), queue.pop()] == ["retry", "a", "b"]


def test_push_front_on_empty_queue_moves_head_below_zero() -> None:
    store = DictStore()
    queue = HostQueue(store)

    queue.push_front("x")
    queue.push_front("y")

    assert queue.bounds == (-2, 0)
    assert store.data == {-2: "y", -1: "x"}
    assert [queue.pop(), queue.pop(), queue.pop()] == ["y", "x", None]


def test_pop_skips_missing_entries() -> None:
    # An entry lost from the store (a hole) must not stop the queue.
    store = DictStore()
    queue = HostQueue(store)
    for payload in "abc":
        queue.push(payload)
    store.remove(0)
    store.remove(1)

    assert queue.pop() == "c"
    assert queue.bounds == (3, 3)


def test_peek_reads_the_front_entry_and_leaves_it() -> None:
    store = DictStore()
    queue = HostQueue(store)
    assert queue.peek() is None
    for payload in "abc":
        queue.push(payload)
    store.remove(0)  # a hole at the front
    assert queue.peek() == "b"
    assert (queue.bounds, store.data) == ((0, 3), {1: "b", 2: "c"})
    assert queue.pop() == "b"


@pytest.mark.parametrize(("head", "tail"), [(1, 0), (5, -5)])
def test_bounds_out_of_order_are_refused(head: int, tail: int) -> None:
    with pytest.raises(ValueError, match=f"head={head} tail={tail}"):
        HostQueue(DictStore(), head, tail)


def test_bounds_round_trip() -> None:
    store = DictStore()
    queue = HostQueue(store)
    for n in range(10):
        queue.push(f"u{n}")
    for _ in range(4):
        queue.pop()
    queue.push_front("again")
    stored = queue.bounds

    # As the keyed function does after a restore: a new queue over the same entries.
    rebuilt = HostQueue(store, *stored)
    rebuilt.push("u10")

    assert len(rebuilt) == 8
    drained = []
    while (payload := rebuilt.pop()) is not None:
        drained.append(payload)
    assert drained == ["again", "u4", "u5", "u6", "u7", "u8", "u9", "u10"]
    assert store.data == {}


def test_matches_a_deque_under_random_operations() -> None:
    rng = random.Random(20240521)
    store = DictStore()
    queue = HostQueue(store)
    model: collections.deque[str] = collections.deque()

    for step in range(6000):
        roll = rng.random()
        # Phases favour growth, then shrinking, so the queue both fills and empties repeatedly.
        grow = (step // 500) % 2 == 0
        if roll < (0.5 if grow else 0.25):
            payload = f"push-{step}"
            queue.push(payload)
            model.append(payload)
        elif roll < (0.6 if grow else 0.35):
            payload = f"front-{step}"
            queue.push_front(payload)
            model.appendleft(payload)
        elif roll < 0.97:
            assert queue.pop() == (model.popleft() if model else None)
        else:
            # Store the bounds and rebuild, as after a checkpoint restore.
            queue = HostQueue(store, *queue.bounds)
        if step % 50 == 0:
            _check(queue, store, model)

    while model:
        assert queue.pop() == model.popleft()
    assert queue.pop() is None
    _check(queue, store, model)


# -- queue entries ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "payload"),
    [
        # the crawl DB's form: no attempt yet, three items
        (QueueEntry("http://a.test/", "", ""), '["http://a.test/","",""]'),
        (QueueEntry("http://a.test/p", "LL", "http://a.test/"),
         '["http://a.test/p","LL","http://a.test/"]'),
        # a URL put back after failed attempts carries their count
        (QueueEntry("http://a.test/p", "L", "http://a.test/", 1),
         '["http://a.test/p","L","http://a.test/",1]'),
        (QueueEntry("http://a.test/p", "L", "", 2), '["http://a.test/p","L","",2]'),
        (QueueEntry("http://a.test/é", "R", "", 0), '["http://a.test/\\u00e9","R",""]'),
    ],
)
def test_queue_entry_round_trip(entry: QueueEntry, payload: str) -> None:
    assert entry.encode() == payload
    assert QueueEntry.decode(payload) == entry


def test_queue_entry_reads_what_the_fetch_operator_stores_from_the_crawl_db() -> None:
    item = ["http://a.test/x", "L", "http://a.test/"]
    stored = json.dumps(item, separators=(",", ":"))  # as operators/fetch.py stores a batch

    assert QueueEntry.decode(stored) == QueueEntry(*item, attempts=0)
    assert QueueEntry.decode(stored).encode() == stored


def test_queue_entry_survives_the_queue_with_its_attempts() -> None:
    queue = HostQueue(DictStore())
    queue.push(QueueEntry("http://a.test/1", "L", "").encode())
    queue.push_front(QueueEntry("http://a.test/0", "L", "", 2).encode())

    assert [QueueEntry.decode(queue.pop()).attempts for _ in range(2)] == [2, 0]


def test_a_batch_says_whether_it_is_ranked_and_carries_entries_as_stored() -> None:
    entries = [QueueEntry("http://a.test/x\ny", "L", "http://a.test/"),
               QueueEntry("http://a.test/r", "L", "", 0, 0.25, [1, 2])]
    message = encode_batch(entries, ranked=True)
    ranked, payloads = decode_batch(message)
    assert ranked
    assert payloads == [entry.encode() for entry in entries]  # stored as they come
    assert decode_entries(message) == entries
    assert decode_batch(encode_batch([], ranked=False)) == (False, [])
    with pytest.raises(ValueError, match="not a batch"):
        decode_batch('[["http://a.test/","L",""]]')  # the list an older crawl DB sent
