"""The near-duplicate index stage (``neardup-index``): the index, sharded over its keys.

It takes the process stage's probes (:class:`crawl.content.neardup_index.NearProbe`, side
output), keyed by their index key (a permuted table and that table's bits of the fingerprint).
State, under each key: ``pages``, a ListState of the pages the key holds, oldest first. It
looks each probe up (:func:`crawl.content.neardup_index.look_up`), tells the verdict stage
(:mod:`operators.neardup`) of the probing page's original if the key holds one, and of later
pages the probing page is near (late answers), and adds the page. It runs at the job's
parallelism; with ``neardup.enabled`` off it gets nothing.
"""

from __future__ import annotations

import logging
import time

from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor

from crawl.content.neardup_index import IndexLayout, NearProbe, answer_is_late, look_up
from crawl.layout import OutputLayout
from crawl.progress import StageStatus
from crawl.stages import (
    NEARDUP_INDEX,
    NEARDUP_INDEX_ADDED,
    NEARDUP_INDEX_FORGOTTEN,
    NEARDUP_INDEX_FOUND,
    NEARDUP_INDEX_HELD_AGAIN,
    NEARDUP_INDEX_LATE,
    NEARDUP_INDEX_PROBES,
)
from operators.context import OpenedStage
from operators.metrics import mirror_status
from operators.neardup import NearDuplicateSettings

__all__ = ["NearIndexFunction"]

log = logging.getLogger(__name__)


class NearIndexFunction(KeyedProcessFunction):
    """Answers probes and adds their pages (see the module docstring)."""

    def __init__(self, settings: NearDuplicateSettings, output_dir: str) -> None:
        self._settings = settings
        self._output_dir = output_dir

    def open(self, runtime_context: RuntimeContext) -> None:
        self._stage = OpenedStage(NEARDUP_INDEX.figures, runtime_context, self._release)
        subtask = self._stage.subtask
        layout = IndexLayout.from_section(self._settings.neardup)
        self._k = layout.k
        self._per_key = layout.per_key
        self._status = StageStatus(OutputLayout(self._output_dir).status, NEARDUP_INDEX.figures,
                                   subtask.index, subtask.attempt)
        self._pages = runtime_context.get_list_state(ListStateDescriptor("pages", Types.STRING()))
        mirror_status(self._status, runtime_context, NEARDUP_INDEX.figures)

    def close(self) -> None:
        self._stage.close()

    def _release(self) -> None:
        self._status.close()

    def process_element(self, value: str, ctx: KeyedProcessFunction.Context):
        began = time.thread_time()
        status = self._status
        try:
            probe = NearProbe.decode(value)
        except (ValueError, TypeError) as error:
            status.count("probes.bad")
            log.warning("unreadable near-duplicate probe (%s): %.200s", error, value)
            return
        entries = list(self._pages.get() or ())
        found = look_up(entries, probe, self._k, self._per_key)
        status.count(NEARDUP_INDEX_PROBES.name)
        if found.entry is None:
            status.count(NEARDUP_INDEX_HELD_AGAIN.name)
        elif found.keep is None:
            self._pages.add(found.entry)
            status.count(NEARDUP_INDEX_ADDED.name)
        else:
            self._pages.update([*found.keep, found.entry])
            status.count(NEARDUP_INDEX_ADDED.name)
            status.count(NEARDUP_INDEX_FORGOTTEN.name, len(entries) - len(found.keep))
        lates = sum(1 for answer in found.answers if answer_is_late(answer))
        if lates:
            status.count(NEARDUP_INDEX_LATE.name, lates)
        if len(found.answers) > lates:
            status.count(NEARDUP_INDEX_FOUND.name)
        status.busy_seconds += time.thread_time() - began
        yield from found.answers
