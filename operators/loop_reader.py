"""The loop source: a lister that finds loop files and a keyed reader that reads each once.

A low-rate tick (Flink's datagen table source, ``job/topology.py``) drives
:class:`LoopListerFunction` (one instance), which announces each visible loop file by name
(:class:`crawl.loop.reader.LoopLister`). :class:`LoopReaderFunction`, keyed by file name, reads
the file in chunks (a processing-time timer takes the next one, so checkpoints pass between
chunks), decodes its lines to ``(vnode, payload)`` records for the crawl DB, keeps how far it
got in the key's state, and once the file is done deletes it when no retained checkpoint can
need it (:func:`crawl.loop.reader.may_delete`) and no pin holds (a savepoint's files being kept:
:mod:`crawl.savepoint_files`), clearing the key's state with it. What the
job keeps for the loop is thus bounded by the files in the directory. A line that is not a
loop line is counted (``decode.lines.bad``) and skipped: a stray file in the loop directory
cannot stop the crawl.
"""

from __future__ import annotations

import logging
import os
import time

from pyflink.common import Types
from pyflink.datastream import FlatMapFunction, KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor

from crawl.layout import OutputLayout
from crawl.loop.reader import (
    CHUNK_BYTES,
    CheckpointDirectory,
    LoopFileProgress,
    LoopLister,
    may_delete,
    read_chunk,
    read_migrated,
)
from crawl.loop.records import LoopRecordError, decode_line
from crawl.progress import StageStatus
from crawl.savepoint_files import deletions_paused
from crawl.stages import DECODE_LINES, LOOP_READER
from operators.context import OpenedStage, job_id_of
from operators.metrics import mirror_status

__all__ = ["LoopListerFunction", "LoopReaderFunction"]

log = logging.getLogger(__name__)

#: How long a done file waits between two looks at the retained checkpoints, and a file that
#: could not be read before it is tried again.
RETRY_MS = 1000


class LoopListerFunction(FlatMapFunction):
    """On each tick, the names of the loop files not announced yet in this run of the job."""

    def __init__(self, loop_dir: str) -> None:
        self._loop_dir = loop_dir

    def open(self, runtime_context: RuntimeContext) -> None:
        self._lister = LoopLister(self._loop_dir)
        self._failing = False

    def flat_map(self, value):
        try:
            names = self._lister.new_files()
        except OSError as error:
            if not self._failing:
                log.warning("cannot list the loop directory %s: %s", self._loop_dir, error)
            self._failing = True
            return
        self._failing = False
        yield from names


class LoopReaderFunction(KeyedProcessFunction):
    """Reads the loop file its key names, a chunk at a time, and deletes it when safe."""

    def __init__(self, output_dir: str, vnodes: int, chunk_bytes: int = CHUNK_BYTES) -> None:
        self._output_dir = output_dir
        self._vnodes = vnodes
        self._chunk_bytes = chunk_bytes

    def open(self, runtime_context: RuntimeContext) -> None:
        self._stage = OpenedStage(LOOP_READER.figures, runtime_context, self._release)
        subtask = self._stage.subtask
        layout = OutputLayout(self._output_dir)
        self._loop_dir = layout.loop
        self._pins = layout.pins
        self._migrated = read_migrated(layout.loop)
        self._progress = runtime_context.get_state(
            ValueStateDescriptor("loop-file", Types.STRING())
        )
        job_id = job_id_of(runtime_context)
        self._checkpoints: CheckpointDirectory | None = None
        if job_id:
            self._checkpoints = CheckpointDirectory(layout.checkpoints / job_id)
        else:
            log.warning("job id unknown: consumed loop files will not be deleted")
        self._waiting: set[str] = set()
        self._deleted = 0
        self._status = StageStatus(
            layout.status, LOOP_READER.figures, subtask.index, subtask.attempt
        )
        mirror_status(self._status, runtime_context, LOOP_READER.figures)

    def close(self) -> None:
        self._stage.close()

    def _release(self) -> None:
        self._status.close()

    def process_element(self, value: str, ctx: KeyedProcessFunction.Context):
        yield from self._step(value, ctx)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext):
        yield from self._step(ctx.get_current_key(), ctx)

    def _step(self, name: str, ctx):
        began = time.thread_time()
        try:
            progress = LoopFileProgress.decode(self._progress.value())
            if progress.done:
                self._delete_when_safe(name, progress, ctx)
                return
            path = self._loop_dir / name
            if progress.offset == 0 and name in self._migrated:
                chunk_lines: list[str] = []
                offset, at_end = 0, True  # read by the file source of an older job
            else:
                try:
                    chunk = read_chunk(path, progress.offset, self._chunk_bytes)
                except FileNotFoundError:
                    self._progress.clear()  # deleted by an attempt this state predates
                    return
                except OSError as error:
                    log.warning("cannot read loop file %s: %s", path, error)
                    self._status.count("files.unreadable")
                    self._later(ctx, RETRY_MS)
                    return
                chunk_lines, offset, at_end = chunk
            records = [record for record in map(self._decode, chunk_lines) if record]
            if at_end:
                newest = self._checkpoints.newest() if self._checkpoints is not None else -1
                progress = LoopFileProgress(offset, newest)
                self._status.count("files.read")
            else:
                progress = LoopFileProgress(offset)
            self._progress.update(progress.encode())
            if at_end:
                self._delete_when_safe(name, progress, ctx)
            else:
                self._later(ctx, 0)
        finally:
            self._status.busy_seconds += time.thread_time() - began
        yield from records

    def _delete_when_safe(self, name: str, progress: LoopFileProgress, ctx) -> None:
        if self._checkpoints is None:
            return
        assert progress.done_after is not None
        if (not may_delete(progress.done_after, self._checkpoints.completed())
                or deletions_paused(self._pins)):
            self._waiting.add(name)
            self._later(ctx, RETRY_MS)
        else:
            try:
                os.remove(self._loop_dir / name)
                self._deleted += 1
            except FileNotFoundError:
                pass
            except OSError as error:
                log.warning("cannot delete consumed loop file %s: %s", name, error)
                self._later(ctx, RETRY_MS * 10)
                return
            self._waiting.discard(name)
            self._progress.clear()
        # Gauges, not counters: housekeeping must not make the crawl look busy.
        self._status.gauges["loop_files_deleted"] = self._deleted
        self._status.gauges["loop_files_pending"] = len(self._waiting)

    def _later(self, ctx, delay_ms: int) -> None:
        timers = ctx.timer_service()
        timers.register_processing_time_timer(timers.current_processing_time() + delay_ms)

    def _decode(self, line: str) -> tuple[int, str] | None:
        try:
            vnode, payload = decode_line(line)
        except LoopRecordError:
            self._status.count(DECODE_LINES.member("bad"))
            return None
        if vnode >= self._vnodes:
            self._status.count(DECODE_LINES.member("bad"))
            return None
        self._status.count(DECODE_LINES.member("in"))
        return vnode, payload

