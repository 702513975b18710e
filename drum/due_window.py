"""The due window: the records a DRUM's next releases can need, in memory, kept exact.

A due selection (:class:`drum.DuePolicy`) takes the best-ranked records that are due. Made by a
pass over every run, it reads the whole DRUM (136 bytes a record) each time; a continuous crawl
selects every second or so, while only a small share of its records comes due in that time.

The window holds, sorted by key, the exact current record of

* every record **due at or before its horizon** (a candidate whose next fetch time, or a
  sitemap's announcement, comes then and whose lease has run out by then: :func:`due_times`),
* every record **QUEUED** (handed out, its outcome not in yet: a host's window counts them),
* every record **UNFETCHED** (a discovery of it could make it due sooner; in a crawl DB they
  are all due at once anyway),
* every record of **status NONE** (a key that only carries counters or flags so far: a
  discovery would make it due at once).

A pass over the runs (a major merge, or a selection made the old way) builds it: the
``target`` records due soonest, the horizon being just before the first one left out (every
record due at or before the horizon is in). Each minor merge keeps it exact without reading
the runs: the merge rule is associative, so a record in the window folded with the merge's
delta record is the record on disk; a key the merge inserts comes with its whole record; and a
key already on disk but not in the window is, by the window's definition, a fetch outcome not
due before the horizon, which a delta can only make due (:func:`may_become_due`) by winning
with an outcome that has a next fetch time (due before the horizon, or giving a URL never due
again a next fetch time, which makes an announcement on disk newer than its last fetch take
effect), by giving recrawl fields to a record that had none (which can do the same), or by
announcing new content; a discovery loses to an outcome. Only those keys are looked up in the
runs: in a crawl DB, the discoveries with an announcement and the outcomes of URLs that were
not handed out (a URL handed out is QUEUED, so held). So a
selection made from the window is the selection a pass over the runs would make (same records,
same ranks), without reading them.

The window is given up (and the next selection passes over the runs and builds a new one) when
it would hold more than ``capacity`` records, when the time passes its horizon, and when the
DRUM is opened or restored (it is never stored: it is derived from the runs). Memory: at most
``capacity`` x 144 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drum.record import (
    NEVER,
    RECORD,
    DrumStatus,
    combine,
    concat,
    next_fetch_times,
    select,
    status_class,
    take,
)

__all__ = ["ALL_DUE", "DueWindow", "WindowBuilder", "due_times", "may_become_due"]

#: The horizon of a window that holds every record with a due time.
ALL_DUE = NEVER - 1

_EMPTY_KEYS = np.empty(0, dtype=np.uint64)


def due_times(values: np.ndarray) -> np.ndarray:
    """When each record can be selected: its next fetch time (the time of a sitemap's
    announcement when that is earlier and newer than its last fetch), or the end of its lease
    when later; :data:`drum.record.NEVER` for a record never due (QUEUED, retired, NONE)."""
    next_fetch = next_fetch_times(values)
    due = np.maximum(next_fetch, values["leased_until_ms"])
    status = values["status"]
    never = (status < DrumStatus.UNFETCHED) | (status == DrumStatus.QUEUED)
    return np.where(never | (next_fetch == NEVER), NEVER, due)


def _always_held(values: np.ndarray) -> np.ndarray:
    """The records a window holds whatever their due time: QUEUED, UNFETCHED and NONE."""
    status = values["status"]
    return (status <= DrumStatus.UNFETCHED) | (status == DrumStatus.QUEUED)


def _held(values: np.ndarray, horizon_ms: int) -> np.ndarray:
    """Which records a window with this horizon holds."""
    return _always_held(values) | (due_times(values) <= horizon_ms)


def may_become_due(deltas: np.ndarray) -> np.ndarray:
    """Which delta records could make a record the window does not hold (a fetch outcome due
    after the horizon, or never) one it must hold, whatever the horizon. The record on disk
    may hold an announcement newer than its last fetch that does not take effect
    (:func:`drum.record.announced`: its next fetch is NEVER, or it has no recrawl fields), so:

    * an outcome with a next fetch time, or a QUEUED mark: it wins if it is the newer, and is
      then due by the horizon, or held, or makes an announcement on disk take effect;
    * an announcement of new content;
    * recrawl fields: given to a record that had none, they make an announcement on disk take
      effect.

    Nothing else can: a discovery loses to an outcome (it keeps the outcome's next fetch), an
    outcome never due again makes the record never due, a lease only grows, a later recrawl
    time only puts announcements further out of effect, and counters, flags and scores move no
    due time. Such outcomes are mostly of URLs handed out, which the window holds. O(n)."""
    outcome = status_class(deltas["status"]) == 2
    timed = (deltas["status"] == DrumStatus.QUEUED) | (deltas["next_fetch_ms"] != NEVER)
    return (outcome & timed) | (deltas["announced_s"] > 0) | (deltas["recrawl_s"] > 0)


@dataclass(frozen=True)
class DueWindow:
    """The records held (see the module docstring), sorted by key. Immutable: each change
    gives a new window, so a merge that fails leaves the DRUM's window as it was."""

    keys: np.ndarray
    values: np.ndarray
    #: Every record due at or before this time is held (:data:`ALL_DUE`: every record).
    horizon_ms: int
    capacity: int

    def __len__(self) -> int:
        return len(self.keys)

    def holds(self, values: np.ndarray) -> np.ndarray:
        """Which of these records (as on disk) the window must hold. O(n)."""
        return _held(values, self.horizon_ms)

    def usable(self, now_ms: int) -> bool:
        """Whether a selection at ``now_ms`` can be made from the window alone."""
        return now_ms <= self.horizon_ms

    def next_rebuild_ms(self) -> int | None:
        """When the window runs out (a selection then passes over the runs), or None."""
        return None if self.horizon_ms >= ALL_DUE else self.horizon_ms + 1

    def apply(
        self,
        keys: np.ndarray,
        deltas: np.ndarray,
        existed: np.ndarray,
        lookup,
    ) -> DueWindow | None:
        """The window after a merge of delta records ``deltas`` (sorted unique ``keys``;
        ``existed``: the key was on disk before, else ``deltas`` holds its whole record).
        ``lookup(keys)`` gives the records on disk of sorted keys (the runs read); it is asked
        only for keys :func:`may_become_due` picks. None when the window would exceed its
        capacity. O(window + delta) time."""
        if len(keys) == 0:
            return self
        at = np.searchsorted(self.keys, keys)
        inside = at < len(self.keys)
        inside[inside] = self.keys[at[inside]] == keys[inside]
        values = self.values
        if inside.any():
            values = values.copy()
            where = at[inside]
            values[where] = combine(values[where], select(deltas, inside))
        outside = ~inside
        fresh = outside & ~existed
        unknown = outside & existed
        unknown[unknown] = may_become_due(select(deltas, unknown))
        add_keys = [keys[fresh]]
        add_values = [select(deltas, fresh)]
        if unknown.any():
            on_disk = lookup(keys[unknown])
            add_keys.append(keys[unknown])
            add_values.append(combine(on_disk, select(deltas, unknown)))
        new_keys = np.concatenate([self.keys, *add_keys])
        new_values = concat([values, *add_values])
        held = _held(new_values, self.horizon_ms)
        new_keys, new_values = new_keys[held], select(new_values, held)
        if len(new_keys) > self.capacity:
            return None
        if any(len(added) for added in add_keys):
            order = np.argsort(new_keys)
            new_keys, new_values = new_keys[order], take(new_values, order)
        return DueWindow(new_keys, new_values, self.horizon_ms, self.capacity)

    def mark(self, keys: np.ndarray, marks: np.ndarray) -> DueWindow:
        """The window after the selection of ``keys`` (held, sorted) got ``marks`` (their
        lease or QUEUED records)."""
        if len(keys) == 0:
            return self
        at = np.searchsorted(self.keys, keys)
        if not np.array_equal(self.keys[np.minimum(at, len(self.keys) - 1)], keys):
            raise AssertionError("a selection from the window took a key it does not hold")
        values = self.values.copy()
        values[at] = combine(values[at], marks)
        held = _held(values, self.horizon_ms)
        return DueWindow(self.keys[held], select(values, held), self.horizon_ms, self.capacity)


class WindowBuilder:
    """Builds a :class:`DueWindow` from the folded records of a pass over the runs, offered in
    key order: the ``target`` records due soonest (every one due by ``now_ms`` must fit) and
    every QUEUED, UNFETCHED and NONE record (at most ``capacity`` in all). Memory
    O(capacity + a chunk): records due later are cut as the pass goes, the horizon moving down
    to just before them."""

    def __init__(self, capacity: int, target: int, now_ms: int) -> None:
        self.capacity = capacity
        self.target = target
        self.now_ms = now_ms
        #: Records due at or after this are not held.
        self._cut = NEVER
        self._keys: list[np.ndarray] = []
        self._values: list[np.ndarray] = []
        self._due: list[np.ndarray] = []
        self._count = 0
        self._special = 0  # records held whatever their due time
        #: Why no window can be built (None: one can): ``held`` (more QUEUED, UNFETCHED and
        #: NONE records than its capacity: a crawl that discovers faster than it fetches),
        #: ``due_now`` (more records due now than its target), ``full`` (more of both
        #: together than its capacity).
        self.failed: str | None = None

    def offer(self, keys: np.ndarray, values: np.ndarray) -> None:
        if self.failed is not None or len(keys) == 0:
            return
        due = due_times(values)
        special = _always_held(values)
        keep = special | (due < self._cut)
        count = int(np.count_nonzero(keep))
        if not count:
            return
        self._special += int(np.count_nonzero(special))
        self._keys.append(keys[keep])
        self._values.append(select(values, keep))
        self._due.append(np.where(special[keep], -1, due[keep]))
        self._count += count
        if self._special > self.capacity:
            self.failed = "held"
        elif self._count - self._special > 2 * self.target:
            self._trim()

    def _trim(self) -> None:
        keys = np.concatenate(self._keys)
        values = concat(self._values)
        due = np.concatenate(self._due)
        timed = due[due >= 0]
        if len(timed) > self.target:
            # Everything due at or after the (target + 1)-th earliest time goes, ties included.
            self._cut = min(self._cut, int(np.partition(timed, self.target)[self.target]))
            if self._cut <= self.now_ms:
                self.failed = "due_now"
                return
        keep = due < self._cut
        self._keys, self._values, self._due = [keys[keep]], [select(values, keep)], [due[keep]]
        self._count = int(np.count_nonzero(keep))

    def result(self) -> DueWindow | None:
        """The window, or None (see :attr:`failed`)."""
        if self.failed is None and self._keys:
            self._trim()
        if self.failed is None and self._count > self.capacity:
            self.failed = "full"
        if self.failed is not None:
            return None
        keys = self._keys[0] if self._keys else _EMPTY_KEYS
        values = self._values[0] if self._values else np.empty(0, dtype=RECORD)
        horizon = ALL_DUE if self._cut == NEVER else self._cut - 1
        return DueWindow(keys, values, horizon, self.capacity)
