"""The near-duplicate stage: one instance judges every archived page against the earlier ones.

Input: :class:`crawl.content.neardup_judge.NearQuery` strings from the process stage's side output,
keyed by one constant key (the stage runs with parallelism 1: near-duplicates share no key). Output:
loop lines for the crawl DB (each page's outcome, and for a near-duplicate its mark and the
rescored links, :class:`crawl.content.neardup_judge.NearJudge`). It writes a WARC ``metadata``
record about each near-duplicate's response into WARC files of its own (prefix
``<warc.prefix>-neardup``), finalising on start what a failed attempt left open.

State, under the one key: ``pages``, a ListState of the pages the index holds
(``fingerprint capture-id url``), from which the index is rebuilt after a restore.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid

from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor

from crawl.archive.warc import WarcFileWriter, recover_open_files
from crawl.config import Config, NearDupSection, WarcSection
from crawl.content.neardup_judge import NearJudge, NearQuery
from crawl.layout import OutputLayout
from crawl.progress import StageStatus
from crawl.stages import (
    NEAR_DUPLICATES,
    NEARDUP_PAGES,
    NEARDUP_PAGES_IN,
    NEARDUP_PAGES_NEAR_DUPLICATE,
)
from operators.context import OpenedStage
from operators.metrics import mirror_status

__all__ = ["NearDuplicateFunction", "NearDuplicateSettings", "neardup_prefix"]

log = logging.getLogger(__name__)


def neardup_prefix(warc: WarcSection) -> str:
    """The name prefix of the stage's WARC files."""
    return f"{warc.prefix}-neardup"


@dataclasses.dataclass(frozen=True)
class NearDuplicateSettings:
    """What the near-duplicate stage is configured by: its section, the WARC files' settings
    and the vnodes."""

    neardup: NearDupSection
    warc: WarcSection
    #: ``crawl.vnodes``: where each page's outcome goes round the loop.
    vnodes: int

    @classmethod
    def from_config(cls, config: Config) -> NearDuplicateSettings:
        return cls(neardup=config.neardup, warc=config.warc, vnodes=config.crawl.vnodes)


class NearDuplicateFunction(KeyedProcessFunction):
    """Judges pages and tells the crawl DB (see the module docstring)."""

    def __init__(self, settings: NearDuplicateSettings, output_dir: str) -> None:
        self._settings = settings
        self._output_dir = output_dir

    def open(self, runtime_context: RuntimeContext) -> None:
        self._stage = OpenedStage(NEAR_DUPLICATES.figures, runtime_context, self._release)
        subtask = self._stage.subtask
        settings = self._settings
        layout = OutputLayout(self._output_dir)
        warc_dir = layout.warc
        warc_dir.mkdir(parents=True, exist_ok=True)
        prefix = neardup_prefix(settings.warc)
        for recovered in recover_open_files(warc_dir, prefix, subtask.index):
            log.warning("recovered WARC file left open: %s", recovered)
        self._status = StageStatus(
            layout.status, NEAR_DUPLICATES.figures, subtask.index, subtask.attempt
        )
        self._warc = WarcFileWriter(
            warc_dir, prefix, subtask.index, settings.warc.max_file_bytes,
            {"operator": settings.warc.operator,
             "description": "near-duplicate verdicts about responses of the crawl"},
        )
        self._pages = runtime_context.get_list_state(
            ListStateDescriptor("pages", Types.STRING())
        )
        self._judge: NearJudge | None = None
        self._producer_id = f"n{subtask.index}.{uuid.uuid4().hex[:12]}"
        self._status.gauge_functions[NEARDUP_PAGES.name] = lambda: len(self._judge or ())
        self._status.gauge_functions["pages_held_again"] = lambda: (
            self._judge.detector.held_again if self._judge is not None else 0
        )
        mirror_status(self._status, runtime_context, NEAR_DUPLICATES.figures)

    def close(self) -> None:
        self._stage.close()

    def _release(self) -> None:
        self._warc.close()
        self._status.close()

    def process_element(self, value: str, ctx: KeyedProcessFunction.Context):
        began = time.thread_time()
        judge = self._judge
        if judge is None:
            # The state is keyed: it can be read only with a key, i.e. here.
            judge = self._judge = NearJudge(
                self._settings.neardup, self._settings.vnodes, self._producer_id
            )
            self._status.count("state.unreadable", judge.restore(self._pages.get() or []))
        try:
            query = NearQuery.decode(value)
        except (ValueError, TypeError) as error:
            self._status.count("queries.bad")
            log.warning("unreadable near-duplicate query (%s): %.200s", error, value)
            return
        verdict = judge.judge(query)
        if verdict.rewrite:
            self._pages.update(judge.entries())
        elif verdict.entry is not None:
            self._pages.add(verdict.entry)
        self._status.count(NEARDUP_PAGES_IN.name)
        if verdict.note is not None:
            self._warc.write_note(query.url, query.warc_date, query.record_id, verdict.note)
            self._status.count(NEARDUP_PAGES_NEAR_DUPLICATE.name)
        self._status.busy_seconds += time.thread_time() - began
        yield from verdict.lines
