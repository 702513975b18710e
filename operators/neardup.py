"""The near-duplicate verdict stage, and the settings of both near-duplicate stages.

The verdict stage (``neardup-verdicts``) takes the near-duplicate index's answers
(:mod:`operators.neardup_index`: a page's original, found by one of its tables, or a late
answer), keyed by the page's WARC record id. State, under each page marked: ``verdict``, that it
was (kept for an hour after its last answer: the answers of its other tables come within
seconds). Output: loop lines for the crawl DB (the page's mark and its rescored links,
:class:`crawl.content.neardup_judge.NearVerdicts`). It writes a WARC ``metadata`` record about
each near-duplicate's response into WARC files of its own (prefix ``<warc.prefix>-neardup``),
finalising on start what a failed attempt left open.

It runs at the job's parallelism; with ``neardup.enabled`` off it gets nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid

from pyflink.datastream import KeyedProcessFunction, RuntimeContext

from crawl.archive.warc import WarcFileWriter, recover_open_files
from crawl.config import Config, NearDupSection, WarcSection
from crawl.content.neardup_index import NearAnswer
from crawl.content.neardup_judge import NearVerdicts
from crawl.layout import OutputLayout
from crawl.progress import StageStatus
from crawl.stages import NEAR_DUPLICATES, NEARDUP_PAGES_IN, NEARDUP_PAGES_NEAR_DUPLICATE
from operators.context import OpenedStage
from operators.metrics import mirror_status
from operators.state import expiring_string_state

__all__ = ["NearDuplicateSettings", "NearVerdictFunction", "neardup_prefix"]

log = logging.getLogger(__name__)

#: How long the verdict stage keeps that it marked a page after its last answer (the others
#: come within the time probes take to reach the index, seconds).
VERDICT_SECONDS = 3600.0


def neardup_prefix(warc: WarcSection) -> str:
    """The name prefix of the verdict stage's WARC files."""
    return f"{warc.prefix}-neardup"


@dataclasses.dataclass(frozen=True)
class NearDuplicateSettings:
    """What the near-duplicate stages are configured by: their section, the WARC files'
    settings and the vnodes."""

    neardup: NearDupSection
    warc: WarcSection
    #: ``crawl.vnodes``: where each page's outcome goes round the loop.
    vnodes: int
    #: How long the verdict stage keeps that it marked a page (0: for ever).
    verdict_seconds: float = VERDICT_SECONDS

    @classmethod
    def from_config(cls, config: Config) -> NearDuplicateSettings:
        return cls(neardup=config.neardup, warc=config.warc, vnodes=config.crawl.vnodes)


class NearVerdictFunction(KeyedProcessFunction):
    """Marks each page the index found a near-duplicate, once, and tells the crawl DB (see the
    module docstring)."""

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
        self._verdict = runtime_context.get_state(
            expiring_string_state("verdict", settings.verdict_seconds))
        self._verdicts = NearVerdicts(settings.neardup, settings.vnodes,
                                      f"n{subtask.index}.{uuid.uuid4().hex[:12]}")
        mirror_status(self._status, runtime_context, NEAR_DUPLICATES.figures)

    def close(self) -> None:
        self._stage.close()

    def _release(self) -> None:
        self._warc.close()
        self._status.close()

    def process_element(self, value: str, ctx: KeyedProcessFunction.Context):
        began = time.thread_time()
        status = self._status
        try:
            answer = NearAnswer.decode(value)
            verdict = self._verdicts.take(self._verdict.value(), answer)
        except (ValueError, TypeError) as error:
            # The index and the process stage write both: said and counted, not a failure
            # that every restart would replay.
            status.count("answers.bad")
            log.warning("unreadable near-duplicate answer (%s): %.200s", error, value)
            return
        status.count(NEARDUP_PAGES_IN.name)
        if answer.late:
            status.count("late_answers")
        if verdict.state is not None:
            self._verdict.update(verdict.state)
        if verdict.note is not None:
            url, warc_date, record_id, fields = verdict.note
            self._warc.write_note(url, warc_date, record_id, fields)
            status.count(NEARDUP_PAGES_NEAR_DUPLICATE.name)
        status.busy_seconds += time.thread_time() - began
        yield from verdict.lines
