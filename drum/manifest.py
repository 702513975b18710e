"""The manifest: which immutable files make up a DRUM, and its counters.

A manifest is a plain value: :meth:`Manifest.to_json` gives a JSON-able dict with a format
version, :meth:`Manifest.to_bytes` its compact UTF-8 JSON (a few hundred bytes plus about 60
bytes per payload file; packing keeps those few), which the job stores in Flink keyed state at
every change, and which a manifest file holds. The bytes end with a checksum (format version
3): ``{...,"checksum":N}``, N being the CRC-32 of the same JSON without it (the bytes up to
``,"checksum"``, then ``}``); :meth:`Manifest.from_bytes` checks it and raises
:class:`~drum.errors.DrumCorruptError` naming the source when it fails. Version 2 (before
the checksum) is still read, without one.
Restoring with it (and the pending journal) gives back exactly the DRUM it describes, because
the files it names never change.

Files are deleted only by :func:`collect_garbage`, and only when no manifest in the set it is
given refers to them; the job passes the manifests of the checkpoints it retains.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from drum.errors import DrumCorruptError, DrumManifestError
from drum.files import FileInfo, checksum
from drum.record import LAYOUT_VERSION, READABLE_LAYOUTS

__all__ = [
    "MANIFEST_VERSION",
    "Counters",
    "Manifest",
    "ManifestHistory",
    "collect_garbage",
    "drum_file_names",
    "manifest_serials",
    "referenced_files",
]

#: 3: the bytes carry a checksum. 2: without one (still read).
MANIFEST_VERSION = 3
READABLE_MANIFEST_VERSIONS = (2, 3)
_CHECKSUM_TAIL = re.compile(rb',"checksum":([0-9]{1,10})\}$')
_FILE_NAME = re.compile(r"^(run|pay|manifest)-[0-9a-f-]+\.(drum|json)(\.tmp)?$")


@dataclass(frozen=True)
class Counters:
    """Counters kept with the manifest (all exact)."""

    #: Distinct keys known (live and archived).
    keys: int = 0
    #: Keys in archived sets.
    archived: int = 0
    #: Sequence number of the next operation (operations are numbered from 0).
    next_seq: int = 0
    #: Length of the payload log: where the next payload file's range starts.
    payload_end: int = 0
    merges: int = 0
    major_merges: int = 0
    #: Due selections made without a major merge (read-only passes).
    selections: int = 0
    #: Folds of the newest delta runs into one (size-tiered).
    delta_folds: int = 0
    compactions: int = 0
    #: Payload files packed into larger ones.
    payload_packs: int = 0
    #: Updates to archived keys, dropped (an archived URL is final; counted, never silent).
    dropped_updates: int = 0


@dataclass(frozen=True)
class Manifest:
    """The live files of a DRUM and its counters. Immutable; every change makes a new one."""

    serial: int = 0
    token: str = "0"
    main: FileInfo | None = None
    deltas: tuple[FileInfo, ...] = ()
    archives: tuple[FileInfo, ...] = ()
    #: where a payload file's range of the payload log starts -> the file (its ``records`` is
    #: the range's length); the ranges are consecutive and cover the log
    payloads: Mapping[int, FileInfo] = field(default_factory=dict)
    reasons: tuple[str, ...] = ("",)
    counters: Counters = Counters()

    @property
    def file_name(self) -> str:
        """Name of this manifest's own file in the directory."""
        return f"manifest-{self.serial:010x}-{self.token}.json"

    def runs(self) -> list[FileInfo]:
        """Run files, main first, then deltas oldest first, then archived sets."""
        return ([self.main] if self.main else []) + list(self.deltas) + list(self.archives)

    def files(self) -> set[str]:
        """Names of every file this manifest refers to (including its own file)."""
        names = {info.name for info in self.runs()}
        names.update(info.name for info in self.payloads.values())
        names.add(self.file_name)
        return names

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "drum-manifest",
            "version": MANIFEST_VERSION,
            "layout": LAYOUT_VERSION,
            "serial": self.serial,
            "token": self.token,
            "main": self.main.to_json() if self.main else None,
            "deltas": [info.to_json() for info in self.deltas],
            "archives": [info.to_json() for info in self.archives],
            "payloads": [[seg, *info.to_json()] for seg, info in sorted(self.payloads.items())],
            "reasons": list(self.reasons),
            "counters": dict(self.counters.__dict__),
        }

    def to_bytes(self) -> bytes:
        """Compact JSON with its checksum last. O(files)."""
        body = json.dumps(self.to_json(), separators=(",", ":")).encode("utf-8")
        return body[:-1] + b',"checksum":%d}' % checksum(body)

    @classmethod
    def from_json(cls, value: Mapping[str, Any], source: str = "manifest") -> Manifest:
        """The manifest of a JSON value (of a readable version), taken as given: a checksum
        in it is not checked (:meth:`from_bytes` checks the bytes read). O(files)."""
        try:
            if value.get("format") != "drum-manifest":
                raise DrumManifestError(source, "not a DRUM manifest")
            # A manifest of an earlier layout lists files of that layout, each read as such.
            if (
                value.get("version") not in READABLE_MANIFEST_VERSIONS
                or value.get("layout") not in READABLE_LAYOUTS
            ):
                raise DrumManifestError(
                    source,
                    f"unsupported manifest version {value.get('version')} / layout "
                    f"{value.get('layout')} (this code reads {list(READABLE_MANIFEST_VERSIONS)} "
                    f"/ layouts "
                    f"{sorted(READABLE_LAYOUTS)})",
                )
            return cls(
                serial=int(value["serial"]),
                token=str(value["token"]),
                main=FileInfo.from_json(value["main"]) if value["main"] else None,
                deltas=tuple(FileInfo.from_json(v) for v in value["deltas"]),
                archives=tuple(FileInfo.from_json(v) for v in value["archives"]),
                payloads={int(v[0]): FileInfo.from_json(v[1:]) for v in value["payloads"]},
                reasons=tuple(str(r) for r in value["reasons"]),
                counters=Counters(**{k: int(v) for k, v in value["counters"].items()}),
            )
        except DrumManifestError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise DrumManifestError(source, f"malformed manifest: {error!r}") from error

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "manifest") -> Manifest:
        """The manifest of :meth:`to_bytes`' bytes (read from a file or from state), its
        checksum checked (a version 2 manifest has none). Raises
        :class:`~drum.errors.DrumCorruptError` (checksum) or
        :class:`~drum.errors.DrumManifestError` (not a manifest) naming ``source``.
        O(size)."""
        try:
            value = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise DrumManifestError(source, f"not valid JSON: {error}") from error
        if not isinstance(value, dict):
            raise DrumManifestError(source, "not a JSON object")
        version = value.get("version")
        if "checksum" in value or (version in READABLE_MANIFEST_VERSIONS and version != 2):
            tail = _CHECKSUM_TAIL.search(data)
            if tail is None:
                raise DrumCorruptError(source, "manifest with no checksum at its end")
            if checksum(data[: tail.start()] + b"}") != int(tail.group(1)):
                raise DrumCorruptError(source, "manifest checksum mismatch")
        return cls.from_json(value, source)

    def evolve(self, **changes: Any) -> Manifest:
        return replace(self, **changes)


def _as_manifest(value: Manifest | Mapping[str, Any] | bytes) -> Manifest:
    if isinstance(value, Manifest):
        return value
    if isinstance(value, bytes | bytearray):
        return Manifest.from_bytes(bytes(value))
    return Manifest.from_json(value)


def referenced_files(manifest: Manifest | Mapping[str, Any] | bytes) -> set[str]:
    """Names (relative to the DRUM directory) of the files a manifest refers to. O(files)."""
    return _as_manifest(manifest).files()


def drum_file_names(directory: str) -> list[str]:
    """Names of the files in ``directory`` that the DRUM wrote (runs, payloads, manifests,
    partial files of an interrupted write). Other files are never touched."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(name for name in names if _FILE_NAME.match(name))


def manifest_serials(directory: str) -> dict[str, int]:
    """The manifest files of ``directory`` and their serials. O(files in the directory)."""
    return {
        name: int(name.split("-")[1], 16)
        for name in drum_file_names(directory)
        if name.startswith("manifest-") and name.endswith(".json")
    }


def collect_garbage(
    directory: str,
    manifests: Iterable[Manifest | Mapping[str, Any] | bytes],
    keep: Iterable[str] = (),
) -> list[str]:
    """Delete the DRUM files of ``directory`` that none of ``manifests`` refers to and that
    are not named in ``keep``.

    Pass every manifest that may still be restored (the live DRUM's and those of the retained
    checkpoints), or the live one and :meth:`ManifestHistory.retained` as ``keep``. Returns
    the deleted names. O(files in the directory); deletes only.
    Never call it while a merge of a DRUM on this directory is running (its new files are not
    in any manifest yet).
    """
    kept = set(keep)
    for manifest in manifests:
        kept |= referenced_files(manifest)
    deleted = []
    for name in drum_file_names(directory):
        if name not in kept:
            os.remove(os.path.join(directory, name))
            deleted.append(name)
    return deleted


def _history_checksum(window_ms: Any, entries: Any) -> int:
    """CRC-32 of a history's content as compact JSON (what it was written as, and what the
    values read back give again: integers and strings)."""
    return checksum(json.dumps([window_ms, entries], separators=(",", ":")).encode("utf-8"))


class ManifestHistory:
    """The files that recent manifests referred to, for garbage collection inside a Flink job.

    PyFlink tells a Python function neither when a checkpoint is taken nor when it completes,
    so the job cannot know which manifest each retained checkpoint holds. It can bound it: a
    checkpoint retained at time ``now`` was taken after ``now - window_ms``, with ``window_ms``
    at least (retained checkpoints + 1) x the checkpoint interval plus the longest checkpoint
    duration; so it holds a manifest that was current at some moment of that window. Such a
    manifest refers to files that are either still current or stopped being referred to
    during the window. The history therefore keeps, for each change of manifest, the names of
    the files it dropped and when: O(files dropped) per merge, whatever the size of the
    manifest. It is a plain JSON-able value to keep in keyed state beside the manifest, with a
    checksum of its content (version 3; version 2, without one, is still read).
    """

    VERSION = 3

    def __init__(self, window_ms: int, entries: Iterable[tuple[int, Iterable[str]]] = ()) -> None:
        self.window_ms = window_ms
        #: (time the files stopped being referred to, their names), oldest first
        self.entries: list[tuple[int, tuple[str, ...]]] = [
            (int(t), tuple(names)) for t, names in entries
        ]

    def replaced(
        self,
        old: Manifest | Mapping[str, Any] | bytes,
        new: Manifest | Mapping[str, Any] | bytes,
        now_ms: int,
    ) -> None:
        """Record that ``new`` replaced ``old`` at ``now_ms``. O(files of both)."""
        dropped = referenced_files(old) - referenced_files(new)
        if dropped:
            self.entries.append((now_ms, tuple(sorted(dropped))))

    def retained(self, now_ms: int) -> set[str]:
        """Names of the files that a retained checkpoint may still refer to although the
        current manifest does not; forgets older entries. O(entries)."""
        self.entries = [(t, names) for t, names in self.entries if t >= now_ms - self.window_ms]
        return {name for _, names in self.entries for name in names}

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict with its checksum. O(entries)."""
        entries = [[t, list(names)] for t, names in self.entries]
        return {
            "version": self.VERSION,
            "window_ms": self.window_ms,
            "entries": entries,
            "checksum": _history_checksum(self.window_ms, entries),
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> ManifestHistory:
        """The history of :meth:`to_json`'s value, its checksum checked (raises
        :class:`~drum.errors.DrumCorruptError`; version 2 has none). O(entries)."""
        if not isinstance(value, Mapping) or value.get("version") not in (2, cls.VERSION):
            raise DrumManifestError("manifest history", f"unsupported history {value!r:.80}")
        if value["version"] != 2 and value.get("checksum") != _history_checksum(
            value.get("window_ms"), value.get("entries")
        ):
            raise DrumCorruptError("manifest history", "checksum mismatch")
        try:
            return cls(
                int(value["window_ms"]),
                [(int(t), [str(n) for n in names]) for t, names in value["entries"]],
            )
        except (KeyError, TypeError, ValueError) as error:
            raise DrumManifestError("manifest history", f"malformed: {error!r}") from error
