"""Errors of the DRUM. Every one names the file it is about, so an operator can find it."""

from __future__ import annotations

__all__ = [
    "DrumCorruptError",
    "DrumError",
    "DrumManifestError",
    "DrumMissingFileError",
    "DrumWriteError",
]


class DrumError(Exception):
    """Base class. ``path`` is the file concerned (or the directory, for directory-wide errors)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class DrumCorruptError(DrumError):
    """A file's bytes fail a check: bad magic, bad checksum, truncated, sizes inconsistent."""


class DrumMissingFileError(DrumError):
    """A file named by the manifest is not on disk (deleted too early, or the wrong directory)."""


class DrumWriteError(DrumError):
    """Writing a new file failed (for example ENOSPC, a full disk). Nothing was changed: the
    merge that wrote it was abandoned, its partial files were removed, the buffer is intact."""


class DrumManifestError(DrumError):
    """A manifest that cannot be used: wrong format or version, or it disagrees with a file."""
