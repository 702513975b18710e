"""The process stage: WARC, crawl log, link extraction and routing of each fetch outcome.

Keyed by :func:`crawl.processing.payload_key`: the payload digest of a response, so that all
the captures of one payload meet in one subtask, whose keyed state ``first-capture`` (target
URI, WARC-Date and record id) says where it was archived first; a later capture is written
as a revisit record. Input: :class:`~crawl.model.FetchResult`. Output: loop lines (strings)
for the loop sink, and with near-duplicate detection on, the probes of each archived HTML page
for the near-duplicate index (side output; the page's outcome travels with the first). Each
subtask writes its own rolling WARC files and its own crawl log; on start it first finalises
the ``.open`` WARC files its previous attempt left (invariant 6, ARCHITECTURE.md), so no file
is left unreadable. The work is :class:`crawl.processing.PageProcessor`'s.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid

from pyflink.datastream import KeyedProcessFunction, OutputTag, RuntimeContext

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
from operators.state import expiring_string_state

__all__ = ["ProcessFunction"]

log = logging.getLogger(__name__)

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


class ProcessFunction(KeyedProcessFunction):
    """Archives, logs and routes fetch outcomes (see the module docstring)."""

    def __init__(self, settings: ProcessSettings, output_dir: str,
                 near_probes: OutputTag | None = None) -> None:
        self._settings = settings
        self._output_dir = output_dir
        self._near_probes = near_probes

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
                expiring_string_state("first-capture", settings.warc.revisit_window_seconds)
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
            near_duplicates=self._near_probes is not None,
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
        if processor.near_probes:
            for probe in processor.near_probes:
                yield self._near_probes, probe
            processor.near_probes.clear()


def _host_address() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return ""
