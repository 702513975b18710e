"""Task failures told in one line: the cause inside Flink's stack trace, and what to do."""

from __future__ import annotations

import errno
from typing import Any

import pytest

from job.failures import FailureWatch, describe_failure, describe_os_error, failures_since

# The shape of a Python error raised in a thread-mode operator, as Flink reports it.
PYTHON_DISK_FULL = """\
org.apache.flink.runtime.JobException: Recovery is suppressed by NoRestartBackoffTimeStrategy
\tat org.apache.flink.runtime.executiongraph.failover.ExecutionFailureHandler.handleFailure
Caused by: pemja.core.PythonException: <class 'OSError'>: [Errno 28] No space left on device: \
'/data/out/warc/crawl-20261125-00000-00003.warc.gz.open'
\tat /work/crawl/archive/warc.py.write(warc_writer.py:211)
"""

JAVA_DISK_FULL = """\
java.io.IOException: Could not perform checkpoint 12 for operator crawldb (1/1)#0.
\tat org.apache.flink.streaming.runtime.tasks.StreamTask.triggerCheckpointOnBarrier
Caused by: java.nio.file.FileSystemException: /data/out/loop/part-0-12.inprogress: \
No space left on device
\tat java.base/sun.nio.fs.UnixException.translateToIOException(UnixException.java:100)
"""

PYTHON_BUG = """\
org.apache.flink.runtime.JobException: Recovery is suppressed
Caused by: pemja.core.PythonException: <class 'KeyError'>: 'host'
\tat /work/operators/fetch.py.process_element(fetch.py:88)
Caused by: java.lang.RuntimeException: Failed to process element
"""


def test_a_full_disk_under_a_python_operator_is_named_with_its_file_and_what_to_do() -> None:
    cause = describe_failure(PYTHON_DISK_FULL)
    assert cause.error.startswith("OSError [Errno 28] No space left on device")
    assert cause.path == "/data/out/warc/crawl-20261125-00000-00003.warc.gz.open"
    assert cause.machine
    assert "disk holding it is full" in cause.line()


def test_an_os_error_as_pemja_reports_it_is_told_by_its_errno_and_frame() -> None:
    # PemJa keeps only the first argument of the exception: an OSError's errno.
    cause = describe_failure(
        "Caused by: pemja.core.PythonException: <class 'OSError'>: 28\n"
        "\tat /work/crawl/warc_writer.write(warc_writer.py:211)\n"
        "\tat /work/operators/process.process_element(process.py:90)\n"
    )
    assert cause.error == "OSError [Errno 28] No space left on device in warc_writer.py:211"
    assert cause.machine
    # Only OSError and its kin carry an errno; another exception's number is its message.
    raised = "Caused by: pemja.core.PythonException: <class '{}'>: {}\n"
    assert describe_failure(raised.format("KeyError", 5)).error == "KeyError: 5"
    assert "cannot be written" in describe_failure(raised.format("PermissionError", 13)).hint
    # The crawl DB's own write error names the errno by its symbol.
    drum = describe_failure(raised.format(
        "drum.errors.DrumWriteError", "/out/crawldb/pay-1.drum: write failed: disk full (ENOSPC)"))
    assert drum.machine
    bug = describe_failure("Caused by: pemja.core.PythonException: <class 'KeyError'>: 'x'\n"
                           "\tat /work/operators/fetch._wake(fetch.py:263)\n")
    assert bug.error == "KeyError: 'x' in fetch.py:263"
    assert not bug.machine


def test_a_full_disk_under_a_java_operator_is_named_too() -> None:
    cause = describe_failure(JAVA_DISK_FULL)
    assert cause.error == ("java.nio.file.FileSystemException: /data/out/loop/part-0-12."
                           "inprogress: No space left on device")
    assert cause.path == "/data/out/loop/part-0-12.inprogress"
    assert cause.machine


def test_a_read_only_file_system_says_it_cannot_be_written() -> None:
    cause = describe_failure("Caused by: pemja.core.PythonException: <class 'OSError'>: "
                             "[Errno 30] Read-only file system: '/data/out/crawldb/x.drum'\n")
    assert cause.path == "/data/out/crawldb/x.drum"
    assert "cannot be written" in cause.hint


def test_other_failures_give_their_last_cause_and_no_hint() -> None:
    cause = describe_failure(PYTHON_BUG)
    assert cause.error == "KeyError: 'host' in fetch.py:88"
    assert not cause.machine
    traceback = "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad\n"
    assert describe_failure(traceback).error == "ValueError: bad"
    java = describe_failure("a.B: top\nCaused by: x.Y: middle\nCaused by: java.lang.Z: root\n")
    assert java.error == "java.lang.Z: root"
    assert describe_failure("").error == "unknown failure"
    long = describe_failure("Caused by: " + "x" * 1000)
    assert len(long.error) == 300


def test_os_errors_of_the_launcher_are_told_with_path_and_hint() -> None:
    full = OSError(errno.ENOSPC, "No space left on device", "/data/out/loop/seeds")
    assert describe_os_error(full) == (
        "No space left on device (/data/out/loop/seeds); the disk holding it is full: free "
        "space there (the crawl needs room for its WARC files, crawl DB, loop files and "
        "checkpoints)"
    )
    missing = FileNotFoundError(errno.ENOENT, "No such file or directory", "/x")
    assert describe_os_error(missing) == "No such file or directory (/x)"


def _answer(*entries: tuple[int, str]) -> dict[str, Any]:
    return {"exceptionHistory": {"entries": [
        {"timestamp": at, "stacktrace": trace, "exceptionName": "x"} for at, trace in entries
    ], "truncated": False}}


def test_failures_since_lists_the_newer_entries_oldest_first() -> None:
    answer = _answer((300, PYTHON_BUG), (200, PYTHON_DISK_FULL), (100, JAVA_DISK_FULL))
    found = failures_since(answer, 150)
    assert [at for at, _ in found] == [200, 300]
    assert found[0][1].machine
    assert failures_since({}, 0) == []


def test_the_watch_tells_each_failure_once_and_survives_a_silent_api() -> None:
    answers: list[Any] = [
        _answer((100, PYTHON_DISK_FULL)),
        _answer((100, PYTHON_DISK_FULL)),
        RuntimeError("no REST API"),
        _answer((100, PYTHON_DISK_FULL), (250, JAVA_DISK_FULL), (260, PYTHON_BUG)),
    ]
    asked: list[str] = []

    def get(path: str) -> Any:
        asked.append(path)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    watch = FailureWatch(get, "abc")
    assert [(n, c.path) for n, c in watch.new()] == [
        (1, "/data/out/warc/crawl-20261125-00000-00003.warc.gz.open")]
    assert watch.new() == []
    assert watch.new() == []
    later = watch.new()
    assert [(n, c.machine) for n, c in later] == [(2, True), (3, False)]
    assert watch.count == 3
    assert watch.last is not None
    assert not watch.last.machine
    assert asked[0] == "/jobs/abc/exceptions?maxExceptions=20"


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_every_full_disk_errno_gets_the_hint(code: int) -> None:
    cause = describe_failure(f"[Errno {code}] whatever: '/p'")
    assert cause.machine
