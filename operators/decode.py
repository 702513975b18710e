"""The decode stage: loop lines (and seed files) to ``(vnode, payload)`` records.

Not keyed; chained to the loop source, whose rows are ``(line, path of its file)``. The vnode
is read from the line's prefix, so the JSON payload is parsed only once, by the crawl DB. A
line that is not a loop line is counted (``decode.lines.bad``) and skipped: a stray file in the
loop directory cannot stop the crawl. Each subtask also deletes the loop files it has read to
their end once no retained checkpoint can need them (:class:`crawl.loop_janitor.LoopJanitor`).
"""

from __future__ import annotations

import logging
import threading
import time

from pyflink.datastream import FlatMapFunction, RuntimeContext

from crawl.layout import OutputLayout
from crawl.loop import LoopRecordError, decode_line
from crawl.loop_janitor import CheckpointDirectory, LoopJanitor
from crawl.progress import StageStatus
from operators.context import Lifecycle, job_id_of, subtask_of
from operators.metrics import mirror_status

__all__ = ["DecodeFunction"]

log = logging.getLogger(__name__)


class DecodeFunction(FlatMapFunction):
    """Splits loop lines into (vnode, payload); bad lines are counted and dropped."""

    def __init__(self, output_dir: str, vnodes: int) -> None:
        self._output_dir = output_dir
        self._vnodes = vnodes

    def open(self, runtime_context: RuntimeContext) -> None:
        subtask = subtask_of(runtime_context)
        self._subtask = subtask.index
        self._closed = False
        Lifecycle.opened("decode", subtask.index, self._shutdown)
        layout = OutputLayout(self._output_dir)
        self._status = StageStatus(layout.status, "decode", subtask.index, subtask.attempt)
        self._janitor: LoopJanitor | None = None
        job_id = job_id_of(runtime_context)
        if job_id:
            self._janitor = LoopJanitor(CheckpointDirectory(layout.checkpoints / job_id))
        else:
            log.warning("job id unknown: consumed loop files will not be deleted")
        # Sweeps also while no line arrives, so the last files of a crawl go too.
        self._stop_sweeping = threading.Event()
        self._sweeper = threading.Thread(
            target=self._sweep_periodically, name=f"loop-janitor-{subtask.index}", daemon=True
        )
        self._sweeper.start()
        mirror_status(self._status, runtime_context, "decode")

    def close(self) -> None:
        Lifecycle.closed("decode", self._subtask, self._shutdown)
        self._shutdown()

    def _shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop_sweeping.set()
        self._sweeper.join(timeout=5)
        self._status.close()

    def _sweep_periodically(self) -> None:
        while not self._stop_sweeping.wait(1.0):
            if self._janitor is not None:
                self._janitor.sweep()
                # A gauge, not a counter: housekeeping must not make the crawl look busy.
                self._status.gauges["loop_files_deleted"] = self._janitor.deleted
                self._status.gauges["loop_files_pending"] = self._janitor.pending

    def flat_map(self, value):
        began = time.thread_time()
        try:
            decoded = self._decode(value)
        finally:
            self._status.busy_seconds += time.thread_time() - began
        if decoded is not None:
            yield decoded

    def _decode(self, value) -> tuple[int, str] | None:
        line, path = value[0], value[1]
        if self._janitor is not None:
            self._janitor.saw(path, line)
        try:
            vnode, payload = decode_line(line)
        except LoopRecordError:
            self._status.count("lines.bad")
            return None
        if vnode >= self._vnodes:
            self._status.count("lines.bad")
            return None
        self._status.count("lines.in")
        return vnode, payload
