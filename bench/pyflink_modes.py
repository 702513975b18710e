"""Two PyFlink design decisions, measured: thread vs process mode, and AsyncDataStream checkpoints.

Backs the README's "Where this departs from the starting design", points 1 and 2.

Part ``modes``: a keyed function with a timer and a state update per record, in
``python.execution-mode: thread`` and ``process``. A continuously monitored ``FileSource``
reads one file of N lines ``k<i mod keys>,<i>``; the stream is keyed by the ``k...`` string
(2,000 distinct keys by default) into :class:`TimerEchoFunction`, which per record appends the
line to a ``ListState`` and registers a processing-time timer at now + ``--timer-delay-ms``; on
the timer it pops every value of the key and emits each with the timer's lateness (wall-clock
now minus the timer's timestamp). A counting function downstream (:class:`CountFunction`) writes
a marker file when it has seen all N. The rate is N over the time from the first record seen by
the keyed function (it writes a marker too) to the N-th record seen by the counter, so the
MiniCluster's start (about 10 s) is excluded. Parallelism 1, no ``execute_and_collect``.
Fed from one file the job runs flat out, so timer lateness there includes queueing behind
input; ``--paced-rate`` adds runs of both modes fed at a steady rate well below either mode's
capacity (files dropped every 0.25 s, as in part ``async``), whose lateness is the timers' own.

Part ``async``: ``AsyncDataStream.unordered_wait`` (process mode only) with an async function
that sleeps a fixed time per record (:class:`SleepFunction`). A second after the job's task is
running, the worker feeds the monitored directory with a new file every 0.25 s,
``--async-rate`` records per second for ``--async-feed-seconds`` (a few hundred records in
all), each line carrying the wall-clock time it was written. Checkpoint durations are read from
the Flink log ("Triggering checkpoint ... @ <ms>" and "Completed checkpoint ...
checkpointDuration=<ms>"). A checkpoint is *busy* if it was triggered between the first record
fed and the last record out, i.e. while requests could be in flight, *idle* otherwise. The
counter downstream also reports each record's extra delay: time out minus time written minus
the sleep, i.e. how long the record waited for something other than its own request. A
checkpoint interval such as ``1h`` (``--checkpoint-intervals 1s 1h``) gives the same run with
no checkpoint while records flow, for contrast.

Both parts use the project's Flink settings: ``flink-conf.yaml`` (nested keys flattened) is
passed to the job as a ``Configuration`` and written as ``config.yaml`` into a Flink
configuration directory (the JVM options come from there), with ``python.executable`` set to
this interpreter, checkpoints in a temporary directory, parallelism 1, and
``python.execution-mode`` set per run. Every run is a fresh child process (``--worker``, one
MiniCluster each). Runs go round by round, each round in a rotated order, so that load from
other jobs on the machine spreads over all settings; the tables show medians over the runs and
the 1-minute load average read before each run.

Usage: ``python bench/pyflink_modes.py --part all --runs 5 --checkpoint-intervals 1s 1h
--json runs.json``; ``--part modes`` or ``--part async`` for one part, ``--tables-from
runs.json`` to print the tables again; ``--help`` lists the options. The Flink functions live
in this file, which the workers import as the module ``pyflink_modes`` (added with
``add_python_file``): functions defined in ``__main__`` cannot be pickled for the Python
workers.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml
from pyflink.common import Types
from pyflink.datastream import (
    AsyncFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    RuntimeContext,
)
from pyflink.datastream.state import ListStateDescriptor

PROJECT_ROOT = Path(__file__).resolve().parent.parent
FLINK_CONF = PROJECT_ROOT / "flink-conf.yaml"
MODULE_NAME = "pyflink_modes"
#: How often the continuous file source lists its directory.
MONITOR_MS = 250
#: How often the async part's feeder drops a new file.
FEED_INTERVAL_S = 0.25
_POLL_S = 0.1


# --- Flink functions (run inside the job; imported by the workers as ``pyflink_modes``) ------


def _write_marker(path: str, payload: dict[str, Any]) -> None:
    """Writes ``payload`` as JSON to ``path`` atomically, so a poller never reads half a file."""
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as stream:
        json.dump(payload, stream)
    os.replace(partial, path)


def _percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile of ``values`` (NaN for no values)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


class TimerEchoFunction(KeyedProcessFunction):
    """Keyed by the line's key; holds the key's lines until a timer a few ms later emits them.

    Per record: one ``ListState.add`` and one processing-time timer at now + ``delay_ms``. On a
    timer: reads and clears the list and emits ``(line, lateness_ms)`` for each line, lateness
    being the wall-clock time now minus the timer's timestamp. The first record seen writes the
    wall-clock time to ``first_marker`` (parallelism 1: one instance sees every record).
    """

    def __init__(self, delay_ms: int, first_marker: str) -> None:
        self.delay_ms = delay_ms
        self.first_marker = first_marker
        self.values = None
        self.seen_first = False

    def open(self, runtime_context: RuntimeContext) -> None:
        # 1. values: the key's lines not yet emitted by a timer.
        self.values = runtime_context.get_list_state(ListStateDescriptor("values", Types.STRING()))
        self.seen_first = False

    def process_element(self, value: str, ctx: KeyedProcessFunction.Context) -> None:
        if not self.seen_first:
            self.seen_first = True
            _write_marker(self.first_marker, {"first": time.time()})
        self.values.add(value)
        timers = ctx.timer_service()
        timers.register_processing_time_timer(timers.current_processing_time() + self.delay_ms)

    def on_timer(
        self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext
    ) -> Iterator[tuple[str, float]]:
        lateness_ms = time.time() * 1000.0 - timestamp
        values = list(self.values.get() or ())
        self.values.clear()
        for value in values:
            yield value, lateness_ms


class CountFunction(FlatMapFunction):
    """Counts ``(line, lateness_ms)`` records; at the ``expected``-th writes the end marker.

    Emits nothing. The marker holds the wall-clock time of the last record and the p50/p99 of
    the lateness values seen.
    """

    def __init__(self, expected: int, marker: str) -> None:
        self.expected = expected
        self.marker = marker
        self.count = 0
        self.lateness: list[float] = []

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = 0
        self.lateness = []

    def flat_map(self, value: tuple[str, float]) -> Iterator[str]:
        self.count += 1
        self.lateness.append(float(value[1]))
        if self.count == self.expected:
            _write_marker(
                self.marker,
                {
                    "last": time.time(),
                    "count": self.count,
                    "lateness_p50_ms": _percentile(self.lateness, 0.50),
                    "lateness_p99_ms": _percentile(self.lateness, 0.99),
                    "lateness_max_ms": max(self.lateness),
                },
            )
        yield from ()


class SleepFunction(AsyncFunction):
    """Stands for a slow network request: answers each line after ``sleep_s`` seconds."""

    def __init__(self, sleep_s: float) -> None:
        self.sleep_s = sleep_s

    async def async_invoke(self, value: str) -> list[str]:
        await asyncio.sleep(self.sleep_s)
        return [value]

    def timeout(self, value: str) -> list[str]:
        return [value]


class DelayCountFunction(FlatMapFunction):
    """Counts ``<seq>,<written_ms>`` lines; at the ``expected``-th writes the end marker.

    Emits nothing. Each line's extra delay is now minus the time it was written minus the
    request's own ``sleep_s``: the time it spent waiting for anything but its request.
    """

    def __init__(self, expected: int, sleep_s: float, marker: str) -> None:
        self.expected = expected
        self.sleep_ms = sleep_s * 1000.0
        self.marker = marker
        self.count = 0
        self.extra: list[float] = []

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = 0
        self.extra = []

    def flat_map(self, value: str) -> Iterator[str]:
        self.count += 1
        written_ms = float(value.split(",", 1)[1])
        self.extra.append(time.time() * 1000.0 - written_ms - self.sleep_ms)
        if self.count == self.expected:
            _write_marker(
                self.marker,
                {
                    "last": time.time(),
                    "count": self.count,
                    "extra_p50_ms": _percentile(self.extra, 0.50),
                    "extra_p99_ms": _percentile(self.extra, 0.99),
                    "extra_max_ms": max(self.extra),
                },
            )
        yield from ()


# --- One run in a worker process ------------------------------------------------------------


def flink_settings(mode: str, workdir: Path, overrides: dict[str, str]) -> dict[str, str]:
    """The project's Flink settings for one run in ``workdir`` in execution mode ``mode``."""
    # Imported here: the job's Python workers import this module and need none of the crawler.
    from job.preparation import flat_settings

    settings = flat_settings(yaml.safe_load(FLINK_CONF.read_text(encoding="utf-8")) or {})
    settings.update(
        {
            "python.executable": sys.executable,
            "python.client.executable": sys.executable,
            "python.execution-mode": mode,
            "execution.checkpointing.dir": (workdir / "checkpoints").as_uri(),
            "execution.checkpointing.savepoint-dir": (workdir / "savepoints").as_uri(),
            "parallelism.default": "1",
        }
    )
    settings.update(overrides)
    return settings


def make_environment(settings: dict[str, str], workdir: Path) -> Any:
    """A local environment with ``settings``, logging to ``workdir/log``."""
    import pyflink
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    conf_dir, log_dir = workdir / "conf", workdir / "log"
    conf_dir.mkdir()
    log_dir.mkdir()
    pyflink_conf = Path(pyflink.__file__).parent / "conf"
    for name in ("log4j.properties", "log4j-console.properties", "log4j-cli.properties"):
        if (pyflink_conf / name).exists():
            shutil.copy(pyflink_conf / name, conf_dir / name)
    (conf_dir / "config.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    os.environ["FLINK_CONF_DIR"] = str(conf_dir)
    os.environ["FLINK_LOG_DIR"] = str(log_dir)
    configuration = Configuration()
    for key, value in settings.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.add_python_file(str(Path(__file__).resolve()))
    return env


def _line_source(env: Any, directory: Path) -> Any:
    from pyflink.common import Duration, WatermarkStrategy
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(directory))
        .monitor_continuously(Duration.of_millis(MONITOR_MS))
        .build()
    )
    return env.from_source(source, WatermarkStrategy.no_watermarks(), "lines").uid("lines")


def _write_lines(directory: Path, name: str, lines: Sequence[str]) -> None:
    """Drops a file into the monitored directory; hidden while written (the source skips it)."""
    hidden = directory / f".{name}"
    hidden.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    hidden.rename(directory / name)


def _wait_for(path: Path, deadline: float, client: Any) -> bool:
    while time.monotonic() < deadline:
        if path.exists():
            return True
        if _job_state(client) in ("FAILED", "CANCELED", "FINISHED"):
            raise RuntimeError(f"the job ended early: {_job_state(client)}")
        time.sleep(_POLL_S)
    return False


def _job_state(client: Any) -> str:
    try:
        return str(client.get_job_status().result()).rsplit(".", 1)[-1]
    except Exception:  # noqa: BLE001 - the MiniCluster is gone once the job has ended
        return "FINISHED"


def _cancel(client: Any) -> None:
    try:
        client.cancel().result()
    except Exception as error:  # noqa: BLE001 - a run's figures are already taken
        print(f"cancel failed: {error}", file=sys.stderr)


def load_average() -> float:
    """The 1-minute load average."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def run_modes_worker(
    mode: str, records: int, keys: int, delay_ms: int, paced: float, timeout_s: float
) -> dict:
    """One run of part ``modes`` in this process; returns its figures.

    ``paced`` 0: the N lines are in one file before the job starts (the job runs flat out).
    Otherwise they are fed at ``paced`` lines per second once the job runs.
    """
    workdir = Path(tempfile.mkdtemp(prefix="bench-modes-"))
    try:
        source_dir = workdir / "in"
        source_dir.mkdir()
        if not paced:
            _write_lines(source_dir, "lines.txt", [f"k{i % keys},{i}" for i in range(records)])
        first, last = workdir / "first.json", workdir / "last.json"
        env = make_environment(flink_settings(mode, workdir, {}), workdir)
        (
            _line_source(env, source_dir)
            .key_by(lambda line: line.split(",", 1)[0], key_type=Types.STRING())
            .process(
                TimerEchoFunction(delay_ms, str(first)),
                output_type=Types.TUPLE([Types.STRING(), Types.DOUBLE()]),
            )
            .name("timer-echo")
            .uid("timer-echo")
            .flat_map(CountFunction(records, str(last)), output_type=Types.STRING())
            .name("count")
            .uid("count")
            .print()
        )
        submitted = time.time()
        client = env.execute_async(f"bench-modes-{mode}")
        stop = threading.Event()
        try:
            if paced:
                _wait_until_running(workdir / "log", client)
                threading.Thread(
                    target=_feed,
                    args=(
                        source_dir,
                        paced,
                        records / paced,
                        stop,
                        lambda i, _: f"k{i % keys},{i}",
                    ),
                    daemon=True,
                ).start()
            done = _wait_for(last, time.monotonic() + timeout_s, client)
        finally:
            stop.set()
            _cancel(client)
        if not done:
            raise RuntimeError(f"{mode}: not all {records} records seen within {timeout_s} s")
        first_at = json.loads(first.read_text())["first"]
        end = json.loads(last.read_text())
        seconds = end["last"] - first_at
        return {
            "mode": mode,
            "records": records,
            "keys": keys,
            "delay_ms": delay_ms,
            "paced": paced,
            "start_s": first_at - submitted,
            "seconds": seconds,
            "rate": records / seconds,
            "lateness_p50_ms": end["lateness_p50_ms"],
            "lateness_p99_ms": end["lateness_p99_ms"],
            "lateness_max_ms": end["lateness_max_ms"],
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


_TRIGGERED = re.compile(r"Triggering checkpoint (\d+) \(type=.*?\) @ (\d+) for job")
_COMPLETED = re.compile(
    r"Completed checkpoint (\d+) for job \w+ \(\d+ bytes, checkpointDuration=(\d+) ms"
)


def read_checkpoints(log_dir: Path) -> list[tuple[int, float, float]]:
    """``(id, triggered at [s since epoch], duration [s])`` of each completed checkpoint."""
    text = "".join(p.read_text(errors="replace") for p in sorted(log_dir.glob("*.log")))
    triggered = {int(i): int(at) / 1000.0 for i, at in _TRIGGERED.findall(text)}
    return [
        (int(i), triggered.get(int(i), 0.0), int(ms) / 1000.0) for i, ms in _COMPLETED.findall(text)
    ]


def _wait_until_running(log_dir: Path, client: Any) -> None:
    """Returns a second after the job's task is running (parallelism 1: one chained task)."""
    deadline = time.monotonic() + 120
    while True:
        text = "".join(p.read_text(errors="replace") for p in log_dir.glob("*.log"))
        if re.search(r"ExecutionGraph .* switched from INITIALIZING to RUNNING", text):
            break
        if time.monotonic() > deadline or _job_state(client) == "FAILED":
            raise RuntimeError("the job's task was not running within 120 s")
        time.sleep(_POLL_S)
    time.sleep(1.0)


def _feed(
    directory: Path,
    rate: float,
    seconds: float,
    stop: threading.Event,
    line: Callable[[int, int], str] = lambda seq, now_ms: f"{seq},{now_ms}",
) -> int:
    """Drops ``rate`` lines per second into ``directory`` for ``seconds``; returns the count.

    Line ``seq`` written at ``now_ms`` (wall clock, ms) reads ``line(seq, now_ms)``.
    """
    sent, start, batch = 0, time.monotonic(), 0
    while not stop.is_set():
        elapsed = time.monotonic() - start
        if elapsed >= seconds:
            break
        due = round(min(seconds, elapsed + FEED_INTERVAL_S) * rate)
        now_ms = int(time.time() * 1000)
        lines = [line(seq, now_ms) for seq in range(sent, due)]
        if lines:
            _write_lines(directory, f"batch-{batch:05d}.txt", lines)
            batch += 1
            sent = due
        stop.wait(max(0.0, start + (batch * FEED_INTERVAL_S) - time.monotonic()))
    return sent


def run_async_worker(
    sleep_s: float, rate: float, feed_s: float, capacity: int, interval: str, timeout_s: float
) -> dict:
    """One run of part ``async`` in this process; returns its figures."""
    from pyflink.common.time import Time
    from pyflink.datastream import AsyncDataStream

    workdir = Path(tempfile.mkdtemp(prefix="bench-async-"))
    try:
        source_dir = workdir / "in"
        source_dir.mkdir()
        expected = round(rate * feed_s)
        last = workdir / "last.json"
        settings = flink_settings(
            "process", workdir, {"execution.checkpointing.interval": interval}
        )
        env = make_environment(settings, workdir)
        answered = AsyncDataStream.unordered_wait(
            _line_source(env, source_dir),
            SleepFunction(sleep_s),
            Time.seconds(int(max(60, 10 * sleep_s))),
            capacity,
            Types.STRING(),
        )
        (
            answered.name("sleep")
            .uid("sleep")
            .flat_map(DelayCountFunction(expected, sleep_s, str(last)), Types.STRING())
            .name("count")
            .uid("count")
            .print()
        )
        client = env.execute_async(f"bench-async-{sleep_s}")
        stop = threading.Event()
        try:
            _wait_until_running(workdir / "log", client)
            fed_at = time.time()
            feeder = threading.Thread(
                target=_feed, args=(source_dir, rate, feed_s, stop), daemon=True
            )
            feeder.start()
            done = _wait_for(last, time.monotonic() + feed_s + timeout_s, client)
            stop.set()
            feeder.join()
            time.sleep(3.0)  # a few idle checkpoints after the last record, for contrast
        finally:
            stop.set()
            _cancel(client)
        if not done:
            raise RuntimeError(f"sleep {sleep_s}: not all {expected} records out in time")
        end = json.loads(last.read_text())
        checkpoints = read_checkpoints(workdir / "log")
        busy = [d for _, at, d in checkpoints if fed_at <= at <= end["last"]]
        idle = [d for _, at, d in checkpoints if not fed_at <= at <= end["last"]]
        return {
            "sleep_s": sleep_s,
            "records": expected,
            "rate": rate,
            "capacity": capacity,
            "interval": interval,
            "busy": busy,
            "idle": idle,
            "through_s": end["last"] - fed_at,
            "extra_p50_ms": end["extra_p50_ms"],
            "extra_p99_ms": end["extra_p99_ms"],
            "extra_max_ms": end["extra_max_ms"],
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# --- The parent: rounds of fresh worker processes, tables ---------------------------------


def _run_child(argv: list[str], timeout_s: float) -> dict:
    load = load_average()
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", *argv]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout_s, cwd=PROJECT_ROOT
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not lines[-1].startswith("{"):
        raise RuntimeError(f"worker {argv} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return {**json.loads(lines[-1]), "load": load}


def _rotated(items: list[Any], shift: int) -> list[Any]:
    shift %= len(items)
    return items[shift:] + items[:shift]


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def measure_modes(args: argparse.Namespace) -> list[dict]:
    """Rounds of part ``modes``: each (mode, N, pace) setting once per round, rotated."""
    settings = [("thread", n, 0.0) for n in args.thread_records]
    settings += [("process", n, 0.0) for n in args.process_records]
    if args.paced_rate:
        settings += [(mode, args.paced_records, args.paced_rate) for mode in ("thread", "process")]
    results = []
    for round_ in range(args.runs):
        for mode, records, paced in _rotated(settings, round_):
            argv = [
                "modes",
                "--mode",
                mode,
                "--records",
                str(records),
                "--keys",
                str(args.keys),
                "--timer-delay-ms",
                str(args.timer_delay_ms),
                "--feed-rate",
                str(paced),
            ]
            result = _run_child(argv, args.timeout + 120)
            results.append(result)
            print(
                f"round {round_ + 1} {mode:7} N={records:>7} paced {paced:g}/s: "
                f"{result['rate']:8.0f} records/s "
                f"over {result['seconds']:6.1f} s, lateness p50 {result['lateness_p50_ms']:.0f}"
                f" p99 {result['lateness_p99_ms']:.0f} ms, load {result['load']:.2f}",
                file=sys.stderr,
                flush=True,
            )
    return results


def measure_async(args: argparse.Namespace) -> list[dict]:
    """Rounds of part ``async``: each (checkpoint interval, sleep) once per round, rotated."""
    settings = [(every, sleep) for every in args.checkpoint_intervals for sleep in args.sleeps]
    results = []
    for round_ in range(args.runs):
        for interval, sleep_s in _rotated(settings, round_):
            argv = [
                "async",
                "--sleep",
                str(sleep_s),
                "--async-rate",
                str(args.async_rate),
                "--async-feed-seconds",
                str(args.async_feed_seconds),
                "--async-capacity",
                str(args.async_capacity),
                "--checkpoint-interval",
                interval,
            ]
            result = _run_child(argv, args.async_feed_seconds + args.timeout + 180)
            results.append(result)
            print(
                f"round {round_ + 1} interval {interval} sleep {sleep_s:>4} s: busy checkpoints "
                f"{[round(d, 2) for d in result['busy']]}, idle median "
                f"{_median(result['idle']):.2f} s, extra delay p50 "
                f"{result['extra_p50_ms']:.0f} ms, load {result['load']:.2f}",
                file=sys.stderr,
                flush=True,
            )
    return results


def modes_table(results: list[dict]) -> str:
    """Markdown: medians per (mode, N), and the thread/process ratio at each shared N."""
    rows = [
        "| mode | input | N | runs | records/s (median) | min–max | seconds (median) "
        "| timer lateness p50 / p99 (ms) | start (s) | load |",
        "|---|---|---:|---:|---:|---|---:|---|---:|---|",
    ]
    groups: dict[tuple[str, int, float], list[dict]] = {}
    for result in results:
        key = (result["mode"], result["records"], result.get("paced", 0.0))
        groups.setdefault(key, []).append(result)
    for (mode, records, paced), group in sorted(
        groups.items(), key=lambda item: (item[0][2], item[0][0] != "thread", -item[0][1])
    ):
        pace = f"{paced:g}/s" if paced else "one file"
        rates = [r["rate"] for r in group]
        loads = [r["load"] for r in group]
        rows.append(
            f"| {mode} | {pace} | {records:,} | {len(group)} | {_median(rates):,.0f} | "
            f"{min(rates):,.0f}–{max(rates):,.0f} | {_median([r['seconds'] for r in group]):.1f} "
            f"| {_median([r['lateness_p50_ms'] for r in group]):,.0f} / "
            f"{_median([r['lateness_p99_ms'] for r in group]):,.0f} "
            f"| {_median([r['start_s'] for r in group]):.1f} "
            f"| {min(loads):.2f}–{max(loads):.2f} |"
        )
    rate = {key: _median([r["rate"] for r in group]) for key, group in groups.items()}
    ratios = []
    for (mode, records, paced), value in sorted(rate.items()):
        if mode == "process" and not paced:
            for (other, other_n, other_paced), thread_rate in sorted(rate.items()):
                if other == "thread" and not other_paced:
                    ratios.append(
                        f"- thread N={other_n:,} / process N={records:,}: "
                        f"{thread_rate / value:.1f}x"
                    )
    return "\n".join(rows + [""] + ratios)


def _seconds(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.2f}"


def async_table(results: list[dict]) -> str:
    """Markdown: checkpoint durations while requests were in flight, per sleep."""
    rows = [
        "| checkpoint interval | sleep per record | runs | records | busy checkpoints "
        "| duration median (s) | p90 / max (s) | idle checkpoint median (s) "
        "| extra delay p50 / p99 (s) | first record in to last out (s) | load |",
        "|---|---:|---:|---:|---:|---:|---|---:|---|---:|---|",
    ]
    groups: dict[tuple[str, float], list[dict]] = {}
    for result in results:
        groups.setdefault((result["interval"], result["sleep_s"]), []).append(result)
    for (interval, sleep_s), group in groups.items():  # in the order of the first round
        busy = [d for r in group for d in r["busy"]]
        idle = [d for r in group for d in r["idle"]]
        loads = [r["load"] for r in group]
        rows.append(
            f"| {interval} | {sleep_s:g} s | {len(group)} | {group[0]['records']} | {len(busy)} | "
            f"{_seconds(_median(busy))} | {_seconds(_percentile(busy, 0.9))} / "
            f"{_seconds(max(busy, default=math.nan))} | "
            f"{_median(idle):.2f} | {_median([r['extra_p50_ms'] for r in group]) / 1000:.2f} / "
            f"{_median([r['extra_p99_ms'] for r in group]) / 1000:.2f} | "
            f"{_median([r['through_s'] for r in group]):.1f} | "
            f"{min(loads):.2f}–{max(loads):.2f} |"
        )
    return "\n".join(rows)


def describe_machine() -> str:
    """nproc, CPU model, Python, PyFlink and Java versions, and the load now."""
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    try:
        java = subprocess.run(
            ["java", "-version"], capture_output=True, text=True, check=False
        ).stderr.splitlines()[0]
    except (OSError, IndexError):
        java = "java: not found"
    from importlib.metadata import version

    return (
        f"nproc {os.cpu_count()}; {cpu}; Python {platform.python_version()}; "
        f"apache-flink {version('apache-flink')}; {java}; load {load_average():.2f}"
    )


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n", 1)[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        allow_abbrev=False,  # the worker's options pass through --worker unparsed
    )
    parser.add_argument("--part", choices=("modes", "async", "all"), default="all")
    parser.add_argument("--runs", type=int, default=5, help="rounds (one run per setting each)")
    parser.add_argument(
        "--thread-records",
        type=int,
        nargs="*",
        default=[100_000, 20_000],
        help="N for thread mode (one setting per value)",
    )
    parser.add_argument(
        "--process-records",
        type=int,
        nargs="*",
        default=[20_000],
        help="N for process mode (keep a run under 2 minutes)",
    )
    parser.add_argument("--keys", type=int, default=2_000, help="distinct keys")
    parser.add_argument("--timer-delay-ms", type=int, default=10, help="timer at now + this")
    parser.add_argument(
        "--paced-rate",
        type=float,
        default=0.0,
        help="also run both modes with lines fed at this rate (timer lateness below "
        "saturation); 0: off",
    )
    parser.add_argument("--paced-records", type=int, default=3_000, help="N of the paced runs")
    parser.add_argument(
        "--sleeps",
        type=float,
        nargs="+",
        default=[0.1, 1.0, 5.0],
        help="seconds each async request sleeps (one setting per value)",
    )
    parser.add_argument("--async-rate", type=float, default=20.0, help="records fed per second")
    parser.add_argument(
        "--async-feed-seconds", type=float, default=15.0, help="how long records are fed"
    )
    parser.add_argument("--async-capacity", type=int, default=1000, help="unordered_wait capacity")
    parser.add_argument(
        "--checkpoint-intervals",
        nargs="+",
        default=["1s"],
        help="for the async part (one setting per value; e.g. 1h for none during a run)",
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds a run may take past its feeding"
    )
    parser.add_argument("--json", type=Path, help="also write every run's figures here")
    parser.add_argument(
        "--tables-from", type=Path, help="only print the tables of a file written by --json"
    )
    parser.add_argument("--worker", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _worker(argv: list[str]) -> dict:
    part, rest = argv[0], argv[1:]
    parser = argparse.ArgumentParser(prog="pyflink_modes --worker")
    if part == "modes":
        parser.add_argument("--mode", choices=("thread", "process"), required=True)
        parser.add_argument("--records", type=int, required=True)
        parser.add_argument("--keys", type=int, required=True)
        parser.add_argument("--timer-delay-ms", type=int, required=True)
        parser.add_argument("--feed-rate", type=float, default=0.0)
        parser.add_argument("--timeout", type=float, default=600.0)
        a = parser.parse_args(rest)
        return run_modes_worker(a.mode, a.records, a.keys, a.timer_delay_ms, a.feed_rate, a.timeout)
    parser.add_argument("--sleep", type=float, required=True)
    parser.add_argument("--async-rate", type=float, required=True)
    parser.add_argument("--async-feed-seconds", type=float, required=True)
    parser.add_argument("--async-capacity", type=int, required=True)
    parser.add_argument("--checkpoint-interval", required=True)
    parser.add_argument("--timeout", type=float, default=300.0)
    a = parser.parse_args(rest)
    return run_async_worker(
        a.sleep,
        a.async_rate,
        a.async_feed_seconds,
        a.async_capacity,
        a.checkpoint_interval,
        a.timeout,
    )


def main(argv: list[str] | None = None) -> None:
    """Run the chosen parts round by round in fresh processes and print Markdown tables."""
    args = parse_arguments(argv)
    if args.worker:
        print(json.dumps(_worker(args.worker)), flush=True)
        os._exit(0)  # the Java gateway's threads may otherwise keep the process alive
    if args.tables_from:
        results = json.loads(args.tables_from.read_text(encoding="utf-8"))
    else:
        print(f"before: {describe_machine()}\n", flush=True)
        results = {}
        if args.part in ("modes", "all"):
            results["modes"] = measure_modes(args)
        if args.part in ("async", "all"):
            results["async"] = measure_async(args)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
        print(f"after: load {load_average():.2f}\n")
    if "modes" in results:
        print("Keyed function with a ListState add and a timer per record, parallelism 1:\n")
        print(modes_table(results["modes"]) + "\n")
    if "async" in results:
        print("AsyncDataStream.unordered_wait, checkpoints while requests are in flight:\n")
        print(async_table(results["async"]))


if __name__ == "__main__":
    # Run as a script this file is __main__, whose classes cloudpickle would ship by value
    # and the workers could not resolve: run it as the module the workers import instead.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(1, str(PROJECT_ROOT))
    importlib.import_module(MODULE_NAME).main()
