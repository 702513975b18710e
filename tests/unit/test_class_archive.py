"""The JVM's class archive between local runs: written at the first JVM's exit, taken once
settled, mapped by the runs after, never in the way (job/class_archive.py)."""

from __future__ import annotations

import os
from pathlib import Path

from job.class_archive import (
    ARCHIVE_VARIABLE,
    KEEP_ARCHIVES,
    KEEP_UNUSED_DAYS,
    SETTLE_SECONDS,
    archive_directory,
    archive_key,
    class_archive_options,
    java_executable,
)

NOW = 1_800_000_000.0
KEY = "0123456789abcdef0123"


def _option(options: list[str], name: str) -> str | None:
    for option in options:
        if option.startswith(f"-XX:{name}="):
            return option.split("=", 1)[1]
    return None


def _age(path: Path, seconds: float) -> None:
    os.utime(path, (NOW - seconds, NOW - seconds))


def test_the_first_run_asks_its_jvm_to_write_the_archive_at_exit(tmp_path: Path) -> None:
    options = class_archive_options(tmp_path / "archives", KEY, writer=4242, now=NOW)
    written = _option(options, "ArchiveClassesAtExit")
    assert written == str(tmp_path / "archives" / f"{KEY}.4242.jsa.tmp")
    assert _option(options, "SharedArchiveFile") is None
    assert "-Xshare:auto" in options  # an archive that does not fit is never an error


def test_a_run_soon_after_leaves_the_archive_being_written_alone(tmp_path: Path) -> None:
    (tmp_path / f"{KEY}.4242.jsa.tmp").write_bytes(b"being written")
    _age(tmp_path / f"{KEY}.4242.jsa.tmp", SETTLE_SECONDS / 2)
    assert class_archive_options(tmp_path, KEY, writer=5, now=NOW) == []


def test_a_settled_archive_becomes_the_key_s_and_is_mapped(tmp_path: Path) -> None:
    for writer in (11, 12):
        path = tmp_path / f"{KEY}.{writer}.jsa.tmp"
        path.write_bytes(f"archive of {writer}".encode())
        _age(path, SETTLE_SECONDS + 1)
    options = class_archive_options(tmp_path, KEY, writer=5, now=NOW)
    final = tmp_path / f"{KEY}.jsa"
    assert _option(options, "SharedArchiveFile") == str(final)
    assert _option(options, "ArchiveClassesAtExit") is None
    assert final.read_bytes() == b"archive of 11"
    assert sorted(p.name for p in tmp_path.iterdir()) == [final.name]  # the other one gone
    # The runs after map it too, and it is marked as used.
    _age(final, 3600)
    assert _option(class_archive_options(tmp_path, KEY, writer=6, now=NOW),
                   "SharedArchiveFile") == str(final)
    assert final.stat().st_mtime == NOW


def test_archives_of_other_keys_go_once_unused_for_long(tmp_path: Path) -> None:
    old = tmp_path / "otherkey000000000000.jsa"
    recent = tmp_path / "otherkey111111111111.jsa"
    left = tmp_path / "otherkey000000000000.7.jsa.tmp"
    writing = tmp_path / "otherkey111111111111.8.jsa.tmp"
    for path in (old, recent, left, writing):
        path.write_bytes(b"x")
    _age(old, (KEEP_UNUSED_DAYS + 1) * 86_400)
    _age(left, 2 * 86_400)
    _age(recent, 86_400)
    _age(writing, 10)
    (tmp_path / f"{KEY}.jsa").write_bytes(b"ours")
    class_archive_options(tmp_path, KEY, writer=5, now=NOW)
    assert not old.exists()
    assert not left.exists()
    assert recent.exists()
    assert writing.exists()  # another installation's JVM may still be writing it


def test_at_most_a_few_archives_are_kept_those_used_last(tmp_path: Path) -> None:
    others = [tmp_path / f"otherkey{n:012d}.jsa" for n in range(KEEP_ARCHIVES + 2)]
    for age, path in enumerate(others, 1):
        path.write_bytes(b"x")
        _age(path, age * 60)  # used a minute, two minutes ... ago
    (tmp_path / f"{KEY}.jsa").write_bytes(b"ours")
    class_archive_options(tmp_path, KEY, writer=5, now=NOW)
    assert sorted(p.name for p in tmp_path.glob("*.jsa")) == sorted(
        [f"{KEY}.jsa", *(p.name for p in others[:KEEP_ARCHIVES - 1])])


def test_a_directory_that_cannot_be_used_means_no_archive(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    assert class_archive_options(blocked / "archives", KEY, writer=5, now=NOW) == []


def test_the_directory_follows_the_environment() -> None:
    assert archive_directory({ARCHIVE_VARIABLE: "off"}) is None
    assert archive_directory({ARCHIVE_VARIABLE: "/srv/jsa"}) == Path("/srv/jsa")
    assert archive_directory({"XDG_CACHE_HOME": "/c"}) == Path(
        "/c/pyflink-crawler/class-archives")


def test_the_key_changes_with_the_java_and_the_jars(tmp_path: Path) -> None:
    java = tmp_path / "java"
    java.write_bytes(b"jvm")
    jars = [tmp_path / "a.jar", tmp_path / "b.jar"]
    for jar in jars:
        jar.write_bytes(b"classes")
    key = archive_key(java, jars)
    assert archive_key(java, reversed(jars)) == key  # the order the directory lists them in
    jars[1].write_bytes(b"other classes")
    assert archive_key(java, jars) != key
    assert archive_key(java, jars[:1]) != archive_key(java, jars)


def test_the_java_is_java_home_s_else_the_path_s(tmp_path: Path) -> None:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_bytes(b"")
    assert java_executable({"JAVA_HOME": str(home)}) == (home / "bin" / "java").resolve()
    assert java_executable({"JAVA_HOME": str(tmp_path / "none")}) is None
    on_path = tmp_path / "path"
    on_path.mkdir()
    (on_path / "java").symlink_to(home / "bin" / "java")
    (home / "bin" / "java").chmod(0o755)
    assert java_executable({"PATH": str(on_path)}) == (home / "bin" / "java").resolve()
    assert java_executable({"PATH": str(tmp_path / "none")}) is None
