"""The process stage: WARC, crawl log, link extraction and routing of each fetch outcome.

Keyed by :func:`crawl.processing.payload_key`: the payload digest of a response, so that all
the captures of one payload meet in one subtask, whose keyed state ``first-capture`` (target
URI, WARC-Date and record id) says where it was archived first; a later capture is written
as a revisit record. Input: :class:`~crawl.model.FetchResult`. Output: loop lines (strings)
for the loop sink, and with near-duplicate detection on, a query per archived HTML page for
the near-duplicate stage (side output; the page's outcome travels with it). Each subtask
writes its own rolling WARC files and its own crawl log; on start it first finalises the
``.open`` WARC files its previous attempt left (invariant 6, ARCHITECTURE.md), so no file is left
unreadable. The work is :class:`crawl.processing.PageProcessor`'s.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid

from pyflink.common import Types
from pyflink.common.time import Duration, Time
from pyflink.datastream import KeyedProcessFunction, OutputTag, RuntimeContext
from pyflink.datastream.state import StateTtlConfig, ValueStateDescriptor

from crawl.archive.crawl_log import CrawlLogWriter
from crawl.archive.warc import Capture, WarcFileWriter, recover_open_files
from crawl.layout import OutputLayout
from crawl.model import FetchResult
from crawl.processing import PageProcessor, ProcessSettings
from crawl.progress import StageStatus
from crawl.stages import PROCESS
from operators.context import OpenedStage
from operators.faults import FaultInjector
from operators.metrics import mirror_status

__all__ = ["ProcessFunction"]

log = logging.getLogger(__name__)

#: State entries RocksDB's TTL compaction filter processes between two reads of the time
#: (Flink's default).
_COMPACTION_FILTER_QUERY_ENTRIES = 1000


class _StateCaptures:
    """The first capture of the current key's payload, in keyed state (one string: target URI,
    WARC-Date and record id separated by spaces, none of which holds one). The current key is
    the payload digest asked for: the key selector and the processor compute it alike
    (:func:`crawl.processing.payload_key`), so it is not read back from Flink (that costs a
    row conversion per record)."""

    def __init__(self, state) -> None:
        self._state = state

    def get(self, digest: str) -> Capture | None:
        value = self._state.value()
        return Capture(*value.split(" ", 2)) if value else None

    def put(self, digest: str, capture: Capture) -> None:
        self._state.update(f"{capture.target_uri} {capture.warc_date} {capture.record_id}")


def first_capture_descriptor(window_seconds: float) -> ValueStateDescriptor:
    """The ``first-capture`` state: with a window, a value expires that long after it was last
    written or read (never returned once expired; RocksDB drops it at compaction). Call it in
    a TaskManager (``open()``): see below."""
    descriptor = ValueStateDescriptor("first-capture", Types.STRING())
    if window_seconds > 0:
        # PyFlink makes the default cleanup strategies' Durations (the RocksDB compaction
        # filter's periodic compaction time) through the py4j gateway, which a TaskManager of
        # a cluster does not have (it tries to start one, and the task fails). So the defaults
        # are turned off and the compaction filter, what cleans expired entries from RocksDB,
        # is asked for with a Duration made through PemJa, the TaskManager's own JVM.
        from pyflink.fn_execution.embedded.java_utils import JDuration

        descriptor.enable_time_to_live(
            StateTtlConfig.new_builder(Time.milliseconds(int(window_seconds * 1000)))
            .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
            .set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
            .disable_cleanup_in_background()
            .cleanup_in_rocksdb_compact_filter(
                _COMPACTION_FILTER_QUERY_ENTRIES, Duration(JDuration.ofDays(30))
            )
            .build()
        )
    return descriptor


class ProcessFunction(KeyedProcessFunction):
    """Archives, logs and routes fetch outcomes (see the module docstring)."""

    def __init__(self, settings: ProcessSettings, output_dir: str,
                 near_queries: OutputTag | None = None) -> None:
        self._settings = settings
        self._output_dir = output_dir
        self._near_queries = near_queries

    def open(self, runtime_context: RuntimeContext) -> None:
        # First close what a failed attempt of this subtask left open (its WARC file).
        self._stage = OpenedStage(PROCESS.figures, runtime_context, self._release)
        subtask = self._stage.subtask
        settings = self._settings
        layout = OutputLayout(self._output_dir)
        warc_dir = layout.warc
        warc_dir.mkdir(parents=True, exist_ok=True)
        for recovered in recover_open_files(warc_dir, settings.warc.prefix, subtask.index):
            log.warning("recovered WARC file left open: %s", recovered)
        layout.logs.mkdir(parents=True, exist_ok=True)
        self._status = StageStatus(
            layout.status, PROCESS.figures, subtask.index, subtask.attempt
        )
        self._warc = WarcFileWriter(
            warc_dir,
            settings.warc.prefix,
            subtask.index,
            settings.warc.max_file_bytes,
            {
                "operator": settings.warc.operator,
                "http-header-user-agent": settings.user_agent.header,
                "isPartOf": layout.root.name,
                "ip": _host_address(),
            },
        )
        self._captures = _StateCaptures(
            runtime_context.get_state(
                first_capture_descriptor(settings.warc.revisit_window_seconds)
            )
        )
        # Each line goes to the file as it is written: a line still buffered when the
        # TaskManager dies would be lost for good if the restored checkpoint counts its fetch
        # as done (a write per page costs little next to the page's WARC records).
        self._log = CrawlLogWriter(
            layout.logs / f"crawl-{subtask.index:05d}.log", flush_interval_s=0.0,
            background_flush=False,
        )
        self._faults = FaultInjector(PROCESS.uid, layout.root)
        self._processor = PageProcessor.from_settings(
            settings, self._warc, self._log, self._status,
            producer_id=f"{subtask.index}.{uuid.uuid4().hex[:12]}",
            captures=self._captures,
            near_duplicates=self._near_queries is not None,
        )
        mirror_status(self._status, runtime_context, PROCESS.figures)

    def close(self) -> None:
        self._stage.close()

    def _release(self) -> None:
        self._warc.close()
        self._log.close()
        self._status.close()

    def process_element(self, value: FetchResult, ctx: KeyedProcessFunction.Context):
        self._faults.tick()
        began = time.thread_time()
        processor = self._processor
        lines = processor.process(value)
        self._status.busy_seconds += time.thread_time() - began
        yield from lines
        if processor.near_queries:
            for query in processor.near_queries:
                yield self._near_queries, query
            processor.near_queries.clear()


def _host_address() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return ""
