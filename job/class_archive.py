"""A class archive for the local run's JVM: the Java classes a crawl loads, kept between runs
so that the next JVM maps them instead of loading and checking each again (the JVM's class
data sharing, a dynamic archive).

A local run's JVM loads some 10,000 classes of Flink and its libraries before the first
request, about 1.5 s of the start (`BENCHMARKS.md`, "A class archive for the JVM"). The first
run on a machine asks its JVM to write the classes it loaded to an archive when it exits
(``-XX:ArchiveClassesAtExit``, a file named after the run's process, ``.jsa.tmp``); the JVM
writes it a second or two after the crawl's process has ended. A later run takes an archive
that has not changed for :data:`SETTLE_SECONDS` as complete, renames it to the archive of its
key, and has its JVM map it (``-XX:SharedArchiveFile``). The key is a digest of the Java
executable and the jars of the class path, so another JDK or another Flink makes another
archive; the JVM checks the archive itself besides, and one that does not fit (or is damaged)
is ignored, never an error: the JVM then loads its classes as usual.

The daemons of the local cluster a crawl at a parallelism above 1 starts
(:mod:`job.local_cluster`) have archives of their own, one for the JobManager and one for the
TaskManagers (:func:`daemon_class_archive`), written and taken the same way.

Archives live in ``$XDG_CACHE_HOME`` (or ``~/.cache``) under ``pyflink-crawler/class-archives``
(about 110 MB each; at most :data:`KEEP_ARCHIVES`, those used longest ago deleted first, and
any unused for :data:`KEEP_UNUSED_DAYS`).
``PYFLINK_CRAWLER_CLASS_ARCHIVE=off`` turns them off, or names another directory. A run whose
JVM gets a class path of its own (metric reporters: :mod:`job.local_settings`) has no archive.
Whatever goes wrong with the directory (read-only, full) leaves the run without one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = [
    "ARCHIVE_VARIABLE", "KEEP_ARCHIVES", "KEEP_UNUSED_DAYS", "SETTLE_SECONDS",
    "archive_directory", "archive_key",
    "class_archive_options", "daemon_class_archive", "java_executable",
]

#: The environment variable that turns the archive off ("off") or names its directory.
ARCHIVE_VARIABLE = "PYFLINK_CRAWLER_CLASS_ARCHIVE"
#: An archive written at a JVM's exit is taken as complete once it is this old.
SETTLE_SECONDS = 30.0
#: Archives kept at most, the key's own included: those of other keys (another JDK, another
#: Flink) used longest ago go first (an installation has three: the launcher's JVM's and one
#: for each kind of daemon of the local cluster)...
KEEP_ARCHIVES = 6
#: ...and any not used for this long.
KEEP_UNUSED_DAYS = 30
#: The JVM says nothing of its archive: one that does not fit is simply not used.
_QUIET = ("-Xshare:auto", "-Xlog:cds*=off", "-Xlog:class+path=off")


def archive_directory(environ: Mapping[str, str]) -> Path | None:
    """Where the archives are kept, or None when they are turned off."""
    chosen = environ.get(ARCHIVE_VARIABLE, "").strip()
    if chosen.lower() in ("off", "0", "false", "no"):
        return None
    if chosen:
        return Path(chosen)
    cache = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "pyflink-crawler" / "class-archives"


def java_executable(environ: Mapping[str, str]) -> Path | None:
    """The Java executable PyFlink starts the local JVM with (``$JAVA_HOME/bin/java``, else
    ``java`` on the path), its links resolved; None if there is none."""
    home = environ.get("JAVA_HOME")
    found = (str(Path(home) / "bin" / "java") if home
             else shutil.which("java", path=environ.get("PATH")))
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_key(java: Path, jars: Iterable[Path]) -> str:
    """A digest of what an archive fits: the Java executable and the class path's jars (each
    by name, size and modification time)."""
    digest = hashlib.sha256()
    for path in (java, *sorted(jars)):
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:20]


def class_archive_options(
    directory: Path, key: str, *, writer: str | int | None = None, now: float | None = None
) -> list[str]:
    """The JVM options of a run with the archive of ``key`` in ``directory``: map it when it
    is there (or a complete one written at an earlier JVM's exit, renamed to it now), else
    write it at this JVM's exit (a file named after ``writer``, this process by default:
    each JVM that may write one at once needs its own), unless another JVM wrote one a moment
    ago; [] when the directory cannot be used."""
    writer = os.getpid() if writer is None else writer
    now = time.time() if now is None else now
    final = directory / f"{key}.jsa"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if not final.is_file():
            written = sorted(directory.glob(f"{key}.*.jsa.tmp"))
            settled = [path for path in written if now - path.stat().st_mtime >= SETTLE_SECONDS]
            if written and not settled:
                return []  # a JVM has just written one (or writes it now): the next run takes it
            if not settled:
                written_at_exit = directory / f"{key}.{writer}.jsa.tmp"
                return [f"-XX:ArchiveClassesAtExit={written_at_exit}", *_QUIET]
            os.replace(settled[0], final)
            for extra in settled[1:]:
                extra.unlink(missing_ok=True)
        os.utime(final, (now, now))  # in use: see _forget_unused
        _forget_unused(directory, key, now)
    except OSError:
        return []
    return [f"-XX:SharedArchiveFile={final}", *_QUIET]


def daemon_class_archive(
    environ: Mapping[str, str], java: str, lib: Path, role: str, writer: str
) -> list[str]:
    """The JVM options of the archive of a local cluster's daemon (``role``: jobmanager or
    taskmanager, each with an archive of its own, as each loads classes of its own) started
    with ``java`` and the jars of ``lib`` as its class path, or [] without one. The jars
    there are links to the installed Flink's: the key is that of the jars they lead to, so
    that the daemons of every crawl share one archive (the JVM finds the class path it was
    written with in the links, which lead to the same files). ``writer`` names the file a
    daemon writes at its exit when there is no archive yet."""
    directory = archive_directory(environ)
    found = shutil.which(java, path=environ.get("PATH")) if directory is not None else None
    if directory is None or found is None:
        return []
    try:
        jars = [path.resolve() for path in lib.glob("*.jar")]
        key = f"{archive_key(Path(found).resolve(), jars)}-{role}"
    except OSError:
        return []
    return class_archive_options(directory, key, writer=writer)


def _forget_unused(directory: Path, key: str, now: float) -> None:
    """Delete the archives of other keys beyond the :data:`KEEP_ARCHIVES` used last (each new
    installation of Flink, a fresh checkout's environment for one, makes another key) or
    unused for :data:`KEEP_UNUSED_DAYS`, and what other keys' JVMs wrote a day ago or more
    and no run took."""
    others = sorted((path for path in directory.glob("*.jsa")
                     if not path.name.startswith(key)),
                    key=lambda path: path.stat().st_mtime, reverse=True)
    for rank, path in enumerate(others):
        if (rank >= KEEP_ARCHIVES - 1
                or now - path.stat().st_mtime > KEEP_UNUSED_DAYS * 86_400):
            path.unlink(missing_ok=True)
    for path in directory.glob("*.jsa.tmp"):
        if not path.name.startswith(key) and now - path.stat().st_mtime > 86_400:
            path.unlink(missing_ok=True)
