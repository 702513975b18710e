"""The files a savepoint names, kept with it: savepoints that stay restorable while the crawl
goes on.

A savepoint holds the crawl's state (each crawl DB partition's manifest, the queues, how far
each loop file was read) but not the files that state names: the crawl DB's DRUM files
(``crawldb/``) and the loop files (``loop/``). The running crawl deletes both as it goes (a
merge's replaced files ``crawldb.file_grace_seconds`` later, a consumed loop file once no
retained checkpoint needs it), so a savepoint taken while it runs would soon name files that
are gone. So every savepoint the crawler takes is followed by :func:`keep_files`: every file
of ``crawldb/`` and ``loop/`` is hard-linked into ``<savepoint>/crawl-files/`` (copied where
a link is impossible, and for a loop file still being written), and the list goes last into
``crawl-files/kept.json``. The files are immutable, so a link costs a directory entry; once the
crawl deletes its own name the savepoint holds the only one, and deleting the savepoint
directory frees them. A savepoint copied elsewhere (``cp -a``) takes its files with it.

From the savepoint's trigger until its files are kept nothing may be deleted: a **pin** (a
file in ``out/pins/`` with an expiry, so that a command that died cannot stop deletion for
good) pauses the crawl DB's garbage collection and the loop reader's deletions
(:func:`deletions_paused`). The crawl DB's grace time alone would cover its files; the loop
reader may delete a consumed file a few checkpoints after it was read.

A crawl restored from a savepoint with kept files first has them **put back**
(:func:`put_back`): missing crawl DB files are linked back (DRUM file names are never used
twice, so a file present under a kept name is that file) and the loop directory is made to
hold exactly the kept loop files: loop files the crawl committed after the savepoint belong to
the history the restore abandons, and are removed, so that the restored crawl reads the loop
as the savepoint left it. (The keeping comes a moment after the savepoint completes: a loop
file the crawl committed in that moment, its next checkpoint's, is kept as well.)
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import shutil
import time
import urllib.parse
import uuid
from collections.abc import Callable
from pathlib import Path

from crawl.layout import OutputLayout

__all__ = [
    "KEPT_DIRECTORY",
    "KeptFiles",
    "KeptFilesError",
    "PutBack",
    "deletions_paused",
    "keep_files",
    "kept_files",
    "pin",
    "put_back",
    "savepoint_path",
    "unpin",
]

#: The directory, inside a savepoint, that holds the crawl's files it names.
KEPT_DIRECTORY = "crawl-files"
#: The list of kept files, written last: a savepoint with this file has all its files.
KEPT_LIST = "kept.json"
#: How long a pin holds when its command does not remove it (it died).
PIN_SECONDS = 900.0
_VERSION = 1


class KeptFilesError(RuntimeError):
    """A savepoint's kept files could not be written or put back."""


def savepoint_path(location: str | Path) -> Path:
    """A savepoint's directory from the location Flink gives (a path or ``file:`` URI)."""
    text = str(location)
    if text.startswith("file:"):
        return Path(urllib.parse.unquote(urllib.parse.urlsplit(text).path))
    if "://" in text:
        raise KeptFilesError(
            f"{text}: the crawl's files can be kept with a savepoint on a mounted filesystem "
            "only (a path or file: URI); take it into a savepoint directory the crawler can "
            "write (--savepoint-dir)"
        )
    return Path(text)


# ---------------------------------------------------------------------------------- pins


def pin(layout: OutputLayout, seconds: float = PIN_SECONDS,
        clock: Callable[[], float] = time.time) -> Path:
    """Pause the crawl's deletions for at most ``seconds``; returns the pin to :func:`unpin`."""
    layout.pins.mkdir(parents=True, exist_ok=True)
    path = layout.pins / f"{uuid.uuid4().hex}.json"
    hidden = path.with_name("." + path.name)
    hidden.write_text(json.dumps({"until": clock() + seconds}), encoding="utf-8")
    os.replace(hidden, path)
    return path


def unpin(path: Path) -> None:
    """Remove a pin (deletions go on at the crawl's next look)."""
    path.unlink(missing_ok=True)


def deletions_paused(pins: Path, clock: Callable[[], float] = time.time) -> bool:
    """Whether a pin in ``pins`` holds now. A pin that cannot be read holds (it is being
    written, or damaged: keeping a file longer is the safe side) unless it is older than
    :data:`PIN_SECONDS`."""
    try:
        entries = list(os.scandir(pins))
    except (FileNotFoundError, NotADirectoryError):
        return False
    now = clock()
    for entry in entries:
        if not entry.name.endswith(".json") or entry.name.startswith("."):
            continue
        try:
            until = float(json.loads(Path(entry.path).read_text(encoding="utf-8"))["until"])
        except FileNotFoundError:
            continue
        except (OSError, ValueError, KeyError, TypeError):
            try:
                until = entry.stat().st_mtime + PIN_SECONDS
            except FileNotFoundError:
                continue
        if until > now:
            return True
    return False


# ---------------------------------------------------------------------------------- keep


@dataclasses.dataclass(frozen=True)
class KeptFiles:
    """What a savepoint keeps: crawl DB files (paths relative to ``crawldb/``), committed loop
    files and loop files still hidden (being written, or waiting for their commit)."""

    crawldb: tuple[str, ...]
    loop: tuple[str, ...]
    loop_hidden: tuple[str, ...]

    def to_json(self) -> dict:
        return {"version": _VERSION, "crawldb": list(self.crawldb), "loop": list(self.loop),
                "loop_hidden": list(self.loop_hidden)}

    @classmethod
    def from_json(cls, value: dict, source: Path) -> KeptFiles:
        try:
            if value["version"] != _VERSION:
                raise KeptFilesError(f"{source}: format {value['version']}, not {_VERSION}")
            return cls(tuple(map(str, value["crawldb"])), tuple(map(str, value["loop"])),
                       tuple(map(str, value["loop_hidden"])))
        except (KeyError, TypeError) as error:
            raise KeptFilesError(f"{source}: not a list of kept files ({error})") from None


def keep_files(layout: OutputLayout, savepoint: str | Path) -> KeptFiles:
    """Link (or copy) every file of the crawl DB and the loop into the savepoint; see the
    module docstring. Call it right after the savepoint completed, with a pin held since
    before it was triggered (or once the job has stopped). Idempotent."""
    target = savepoint_path(savepoint) / KEPT_DIRECTORY
    if not target.parent.is_dir():
        raise KeptFilesError(f"{target.parent}: no such savepoint directory")
    target.mkdir(exist_ok=True)
    crawldb = []
    for path in _files_under(layout.crawldb):
        relative = path.relative_to(layout.crawldb)
        if _link_or_copy(path, target / "crawldb" / relative):
            crawldb.append(relative.as_posix())
    loop, hidden = [], []
    for name in _loop_names(layout.loop):
        source = layout.loop / name
        if name.startswith((".", "_")):
            # Being written, or waiting for the commit that renames it: a copy, since the
            # sink may still append to it.
            if _copy(source, target / "loop" / name):
                hidden.append(name)
        elif _link_or_copy(source, target / "loop" / name):
            loop.append(name)
    kept = KeptFiles(tuple(sorted(crawldb)), tuple(sorted(loop)), tuple(sorted(hidden)))
    _write_atomically(target / KEPT_LIST, json.dumps(kept.to_json()).encode("utf-8"))
    return kept


def kept_files(savepoint: str | Path) -> KeptFiles | None:
    """The files kept with a savepoint (or checkpoint) directory; None when it keeps none
    (a checkpoint, a savepoint taken without the crawler (``flink savepoint``), or one on a
    filesystem that is not mounted here)."""
    try:
        source = savepoint_path(savepoint) / KEPT_DIRECTORY / KEPT_LIST
    except KeptFilesError:
        return None
    try:
        value = json.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise KeptFilesError(f"{source}: unreadable: {error}") from None
    if not isinstance(value, dict):
        raise KeptFilesError(f"{source}: not a list of kept files")
    return KeptFiles.from_json(value, source)


# ---------------------------------------------------------------------------------- put back


@dataclasses.dataclass
class PutBack:
    """What :func:`put_back` did: files linked back, loop files of a later state removed."""

    crawldb_restored: int = 0
    loop_restored: int = 0
    loop_removed: int = 0

    def describe(self) -> str:
        return (f"{self.crawldb_restored} crawl DB file(s) and {self.loop_restored} loop "
                f"file(s) put back from the savepoint, {self.loop_removed} loop file(s) of a "
                "later state removed")


def put_back(layout: OutputLayout, savepoint: str | Path) -> PutBack | None:
    """Make the output directory hold the files kept with ``savepoint`` (see the module
    docstring); None when it keeps none. Before the job starts, and before seeds are added."""
    kept = kept_files(savepoint)
    if kept is None:
        return None
    source = savepoint_path(savepoint) / KEPT_DIRECTORY
    report = PutBack()
    for relative in kept.crawldb:
        live = layout.crawldb / relative
        if not live.exists():
            _restore(source / "crawldb" / relative, live, link=True)
            report.crawldb_restored += 1
    layout.loop.mkdir(parents=True, exist_ok=True)
    wanted = set(kept.loop) | set(kept.loop_hidden)
    for name in _loop_names(layout.loop):
        if name not in wanted:
            (layout.loop / name).unlink(missing_ok=True)
            report.loop_removed += 1
    for name in kept.loop:
        if not (layout.loop / name).exists():
            _restore(source / "loop" / name, layout.loop / name, link=True)
            report.loop_restored += 1
    for name in kept.loop_hidden:
        # Always the kept copy: what a restored sink commits or goes on writing is the
        # savepoint's version, never a later one.
        _restore(source / "loop" / name, layout.loop / name, link=False)
        report.loop_restored += 1
    return report


# ---------------------------------------------------------------------------------- files


def _files_under(directory: Path) -> list[Path]:
    found = []
    for root, _, names in os.walk(directory):
        found.extend(Path(root) / name for name in names)
    return sorted(found)


def _loop_names(directory: Path) -> list[str]:
    try:
        return sorted(entry.name for entry in os.scandir(directory) if entry.is_file())
    except FileNotFoundError:
        return []


def _link_or_copy(source: Path, target: Path) -> bool:
    """Link ``source`` at ``target`` (copy across filesystems); False when ``source`` is gone
    (deleted before the pin: no savepoint after the pin names it)."""
    if target.exists():
        return True
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except FileNotFoundError:
        return False
    except OSError as error:
        if error.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        return _copy(source, target)
    return True


def _copy(source: Path, target: Path) -> bool:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    try:
        shutil.copyfile(source, partial)
    except FileNotFoundError:
        partial.unlink(missing_ok=True)
        return False
    os.replace(partial, target)
    return True


def _restore(kept: Path, live: Path, *, link: bool) -> None:
    """Put a kept file at ``live`` (replacing what is there) by a link, or a copy."""
    if not kept.is_file():
        raise KeptFilesError(f"{kept}: listed in the savepoint's {KEPT_LIST} but missing")
    live.parent.mkdir(parents=True, exist_ok=True)
    partial = live.with_name(f".{live.name}.putback")
    partial.unlink(missing_ok=True)
    if link:
        try:
            os.link(kept, partial)
        except OSError:
            shutil.copyfile(kept, partial)
    else:
        shutil.copyfile(kept, partial)
    os.replace(partial, live)


def _write_atomically(path: Path, data: bytes) -> None:
    partial = path.with_name("." + path.name + ".partial")
    with open(partial, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(partial, path)
