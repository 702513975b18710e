"""What made the crawl's Flink job fail, said in one line a user can act on.

A task that fails (a full disk under the output directory, a read-only file system, a bug)
shows up in Flink as a long Java stack trace, with the Python error inside it. The launcher
watches the job's exception history in Flink's REST API (``/jobs/<id>/exceptions``) and
prints each new failure as :class:`FailureCause`: the error that caused it (the Python
``OSError`` or the Java I/O exception, with the path it names) and, for the failures that
come from the machine rather than the crawl, what to do. Flink restarts the job from its last
checkpoint (``restart-strategy`` in ``flink-conf.yaml``), so a crawl whose disk is freed in
time goes on by itself; one whose restarts run out stops, and ``--resume`` continues it from
that checkpoint.
"""

from __future__ import annotations

import builtins
import dataclasses
import errno
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "FailureCause", "FailureWatch", "describe_failure", "describe_os_error", "failures_since",
    "first_line",
]

# A Python OSError as Python prints it: "[Errno 28] No space left on device: '/out/warc/x'".
_PYTHON_OS_ERROR = re.compile(r"\[Errno (\d+)\] ([^\n:']+?)(?::\s*'([^'\n]*)')?(?=$|[\n'\"),])",
                              re.MULTILINE)
# A Java I/O exception: "java.nio.file.FileSystemException: /out/x: No space left on device"
# or "java.io.IOException: No space left on device".
_JAVA_IO_ERROR = re.compile(
    r"((?:java|org\.apache\.flink)[\w.$]*(?:Exception|Error)): ([^\n]*?(?:No space left on "
    r"device|Disk quota exceeded|Read-only file system|Permission denied|Access denied)[^\n]*)"
)
_CAUSED_BY = re.compile(r"^Caused by: (.+)$", re.MULTILINE)
# A Python exception raised in a thread-mode operator (PemJa: its first argument only, so an
# OSError shows as its errno), with the Python frames after it ("at /dir/module.function(
# file.py:line)"); or the last line of a Python traceback (process mode).
_PEMJA_ERROR = re.compile(r"PythonException: <class '([\w.]+)'>: ([^\n]*)")
_PEMJA_FRAME = re.compile(r"^\s*at (/[^\n(]*)\(([\w.]+\.py):(\d+)\)$", re.MULTILINE)
_PYTHON_ERROR_LINE = re.compile(r"^(\w+(?:Error|Exception)): (.+)$", re.MULTILINE)

_FULL = {errno.ENOSPC, errno.EDQUOT}
_UNWRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM}
_FULL_WORDS = ("No space left on device", "Disk quota exceeded", "ENOSPC", "EDQUOT",
               "disk full")
_UNWRITABLE_WORDS = ("Read-only file system", "Permission denied", "Access denied", "EROFS",
                     "EACCES")
_HINT_FULL = ("the disk holding it is full: free space there (the crawl needs room for its "
              "WARC files, crawl DB, loop files and checkpoints)")
_HINT_UNWRITABLE = ("it cannot be written: check the file system (read-only?) and the "
                    "permissions of the output directory")
_LIMIT = 300


@dataclasses.dataclass(frozen=True, slots=True)
class FailureCause:
    """The cause of one task failure: ``error`` (one line), ``path`` (the file it names, if
    any) and ``hint`` (what to do, for failures of the machine rather than the crawl)."""

    error: str
    path: str = ""
    hint: str = ""

    @property
    def machine(self) -> bool:
        """Whether the machine is at fault (disk full, unwritable), not the crawl."""
        return bool(self.hint)

    def line(self) -> str:
        """The cause in one line, with its hint."""
        text = self.error
        if self.path and self.path not in text:
            text += f" ({self.path})"
        return f"{text}; {self.hint}" if self.hint else text


def describe_failure(trace: str) -> FailureCause:
    """The cause of a failure from its stack trace as Flink reports it (Java and Python)."""
    python = _PYTHON_OS_ERROR.search(trace)
    if python is not None:
        code, message, path = int(python.group(1)), python.group(2).strip(), python.group(3)
        error = f"[Errno {code}] {message}" + (f": '{path}'" if path else "")
        return FailureCause(_clip(f"OSError {error}"), path or "", _hint(code, message))
    java = _JAVA_IO_ERROR.search(trace)
    if java is not None:
        message = java.group(2).strip()
        path = ""
        if ": " in message and message.startswith("/"):
            path = message.split(": ", 1)[0]
        return FailureCause(_clip(f"{java.group(1)}: {message}"), path, _hint(None, message))
    pemja = _PEMJA_ERROR.search(trace)
    if pemja is not None:
        name, message = pemja.group(1), pemja.group(2).strip()
        frame = _PEMJA_FRAME.search(trace, pemja.end())
        where = f" in {frame.group(2)}:{frame.group(3)}" if frame is not None else ""
        kind = getattr(builtins, name.rsplit(".", 1)[-1], None)
        if message.isdigit() and isinstance(kind, type) and issubclass(kind, OSError):
            code = int(message)
            described = f"{name} [Errno {code}] {os.strerror(code)}{where}"
            return FailureCause(_clip(described), "", _hint(code, os.strerror(code)))
        return FailureCause(_clip(f"{name}: {message}{where}"), "", _hint(None, message))
    python_lines = _PYTHON_ERROR_LINE.findall(trace)
    if python_lines:
        name, message = python_lines[-1]
        return FailureCause(_clip(f"{name}: {message}"))
    causes = _CAUSED_BY.findall(trace)
    if causes:
        return FailureCause(_clip(causes[-1].strip()))
    first = trace.strip().splitlines()[0] if trace.strip() else "unknown failure"
    return FailureCause(_clip(first))


def describe_os_error(error: OSError) -> str:
    """An OSError the launcher met, in one line with the path it names and what to do."""
    message = error.strerror or str(error)
    text = f"{message} ({error.filename})" if error.filename else message
    hint = _hint(error.errno, message)
    return f"{text}; {hint}" if hint else text


def _hint(code: int | None, message: str) -> str:
    if code in _FULL or any(words in message for words in _FULL_WORDS):
        return _HINT_FULL
    if code in _UNWRITABLE or any(words in message for words in _UNWRITABLE_WORDS):
        return _HINT_UNWRITABLE
    return ""


def first_line(error: BaseException) -> str:
    """An error in one line: the message of the last exception its text names (a Py4J error
    carries a whole Java trace, whose last is the innermost cause), else its first line."""
    text = str(error)
    causes = re.findall(r"(?:Exception|Error): ([^\n]+)", text)
    line = causes[-1] if causes else text.splitlines()[0] if text else type(error).__name__
    return line[:_LIMIT]


def _clip(text: str) -> str:
    return text if len(text) <= _LIMIT else text[: _LIMIT - 3] + "..."


def failures_since(answer: Mapping[str, Any], after_ms: int) -> list[tuple[int, FailureCause]]:
    """The failures of a ``/jobs/<id>/exceptions`` answer later than ``after_ms``, oldest
    first, as (timestamp in ms, cause)."""
    history = answer.get("exceptionHistory") or {}
    entries: Iterable[Mapping[str, Any]] = history.get("entries") or []
    found = []
    for entry in entries:
        at = int(entry.get("timestamp") or 0)
        if at > after_ms:
            found.append((at, describe_failure(str(entry.get("stacktrace") or ""))))
    if not found and answer.get("root-exception") and int(answer.get("timestamp") or 0) > after_ms:
        found.append((int(answer["timestamp"]), describe_failure(str(answer["root-exception"]))))
    return sorted(found, key=lambda item: item[0])


class FailureWatch:
    """The failures of one job not yet told, read from Flink's REST API (``get`` does one
    GET and returns the parsed JSON); every failure is told once."""

    def __init__(self, get: Any, job_id: str) -> None:
        self._get = get
        self._path = f"/jobs/{job_id}/exceptions?maxExceptions=20"
        self._told_ms = 0
        self.last: FailureCause | None = None
        self.count = 0

    def new(self) -> list[tuple[int, FailureCause]]:
        """The failures since the last call, each with its number (1 for the job's first),
        none if the REST API does not answer."""
        try:
            answer = self._get(self._path)
        except Exception:  # noqa: BLE001 - no answer now: ask again at the next poll
            return []
        found = failures_since(answer, self._told_ms) if isinstance(answer, Mapping) else []
        told = self.count
        if found:
            self._told_ms = found[-1][0]
            self.last = found[-1][1]
            self.count += len(found)
        return [(told + number, cause) for number, (_, cause) in enumerate(found, 1)]
