"""What every way of running the crawl does before its job starts, and shares.

The local run (:mod:`job.launcher`, on the MiniCluster) and the job ``flink run`` submits
(:mod:`job.cluster`, ``job/flink_job.py``) start alike: the output directory is made ready
(:func:`prepare_output`: a new crawl's seeds go into the loop, a resumed crawl's fixed settings
are checked and the files kept with its savepoint put back), the Flink settings are read from
``flink-conf.yaml`` and completed for this crawl (:func:`flink_configuration`), and a savepoint
taken by an earlier version is restored with the settings :func:`migrate_earlier_version` gives.
What cannot go on raises :class:`CrawlError`, whose message says why; both entry points
(``python -m job`` crawl, demo and report; ``job/flink_job.py``) turn it, a configuration
error or an ``OSError`` into one line on stderr and an exit status with :func:`exit_status`.
"""

from __future__ import annotations

import os
import shutil
import sys
import urllib.parse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

import yaml

from crawl.config import Config, ConfigError
from crawl.crawldb.partition import minimum_file_grace_seconds
from crawl.layout import FixedSettingsError, OutputLayout, flink_uri
from crawl.loop.reader import files_read_by_file_source, write_migrated
from crawl.loop.records import VNODE_KEY, write_seed_file
from crawl.savepoint_files import KeptFilesError, put_back
from crawl.stages import RETIRED_UIDS
from crawl.urls.normalize import UrlNormalizer, normalization_settings
from crawl.urls.scope import UrlPolicy
from job.failures import describe_os_error
from job.operator_ids import holds_state_of
from job.status import JOB_NAME

__all__ = [
    "DEFAULT_FLINK_CONF", "FIXED_BEFORE_RECORDED", "MIN_IDLE_SECONDS",
    "PROJECT_ROOT", "CrawlError", "exit_status", "fixed_settings", "flat_settings",
    "flink_configuration", "migrate_earlier_version", "path_for_embedded_python",
    "prepare_output",
    "put_back_kept_files", "pyflink_home",
]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FLINK_CONF = PROJECT_ROOT / "flink-conf.yaml"
#: The loop needs a few checkpoint intervals to go round; idle_seconds must exceed this.
MIN_IDLE_SECONDS = 5.0
#: Fixed settings recorded only by later versions, with the value earlier crawls had.
FIXED_BEFORE_RECORDED = {"fetch routing": "host", "priority.enabled": False}


class CrawlError(RuntimeError):
    """The crawl could not start or the Flink job failed; the message says why."""


def exit_status(command: Callable[[], int]) -> int:
    """The exit status of a command that runs the crawl: ``command()``'s own, or that of the
    error that stopped it, said on stderr in one line: 2 for a configuration error, 1 for a
    crawl that could not go on (:class:`CrawlError`, or an ``OSError`` with the path it
    names and what to do)."""
    try:
        return command()
    except ConfigError as error:
        print(f"configuration error: {error}", file=sys.stderr)
        return 2
    except CrawlError as error:
        print(f"crawl failed: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"crawl failed: {describe_os_error(error)}", file=sys.stderr)
        return 1


def flat_settings(mapping: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """A ``flink-conf.yaml`` as Flink's settings: nested keys joined with dots, every value a
    string (booleans as ``true`` and ``false``)."""
    flat: dict[str, str] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flat_settings(value, name + "."))
        elif isinstance(value, bool):
            flat[name] = "true" if value else "false"
        else:
            flat[name] = str(value)
    return flat


def flink_configuration(
    config: Config, layout: OutputLayout, flink_conf: Path = DEFAULT_FLINK_CONF
) -> dict[str, str]:
    """The Flink settings of the crawl: ``flink_conf`` plus what this crawl decides (a job
    submitted to a cluster keeps the part a job can set: :func:`job.cluster.job_settings`)."""
    try:
        loaded = yaml.safe_load(flink_conf.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise CrawlError(f"cannot read Flink configuration {flink_conf}: {error}") from None
    settings = flat_settings(loaded)
    settings.update(
        {
            "execution.checkpointing.dir": flink_uri(layout.checkpoints),
            "execution.checkpointing.savepoint-dir": flink_uri(layout.savepoints),
            "python.executable": sys.executable,
            "python.client.executable": sys.executable,
            "parallelism.default": str(config.crawl.parallelism),
            "pipeline.max-parallelism": str(config.crawl.vnodes),
            "pipeline.name": JOB_NAME,
        }
    )
    try:
        grace = minimum_file_grace_seconds(settings)
    except ValueError as error:
        raise CrawlError(f"{flink_conf}: {error}") from None
    if config.crawldb.file_grace_seconds < grace:
        raise CrawlError(
            f"crawldb.file_grace_seconds: must be at least {grace:g} with the checkpoint "
            f"settings of {flink_conf} ((retained + 1) x interval + timeout: the crawl DB "
            f"keeps replaced files that long for the retained checkpoints), got "
            f"{config.crawldb.file_grace_seconds:g}"
        )
    return settings


def fixed_settings(config: Config) -> dict[str, object]:
    """The settings fixed for a crawl's life (recorded in ``crawl.json``, checked on resume)."""
    return {
        "crawl.vnodes": config.crawl.vnodes,
        "crawldb.partitions": config.crawldb.partitions,
        "vnode key": VNODE_KEY,
        # It decides each host's key in the fetch stage, where its queue is kept.
        "fetch routing": config.politeness.fetch_routing,
        # With priority the crawl DB hands out URLs it marks QUEUED; without, every new URL
        # goes to the frontier at once: switching would send URLs twice or never.
        "priority.enabled": config.priority.enabled,
        **normalization_settings(config.urls),
    }


def prepare_output(
    layout: OutputLayout,
    config: Config,
    seeds: Iterable[str],
    *,
    resuming: bool,
    overwrite: bool,
    out: TextIO,
    how_to_resume: str,
    restore_from: str | Path | None = None,
) -> int:
    """Make the output directory ready for a job, locally or on a cluster: a resumed crawl's
    fixed settings must match (its figures start again; the budget ledger carries over) and
    the files kept with the savepoint it restores (``restore_from``) are put back; a new
    crawl needs a directory that holds none (or ``overwrite``) and a valid seed. Seeds
    (optional when resuming) go into the loop; returns how many were accepted."""
    try:
        layout.check_writable()
    except OSError as error:
        raise CrawlError(
            f"cannot write the output directory {layout.root}: {describe_os_error(error)}"
        ) from None
    fixed = fixed_settings(config)
    if resuming:
        try:
            layout.check_fixed_settings(fixed, implied=FIXED_BEFORE_RECORDED)
        except FixedSettingsError as error:
            raise CrawlError(str(error)) from None
        shutil.rmtree(layout.status, ignore_errors=True)
    elif layout.holds_crawl():
        if not overwrite:
            raise CrawlError(
                f"{layout.root} already holds a crawl; choose another --out, {how_to_resume}, "
                "or pass --overwrite to replace it"
            )
        layout.clear()
    layout.make()
    layout.record_fixed_settings(fixed)
    if restore_from is not None:
        put_back_kept_files(layout, restore_from, out)
    accepted, rejected = write_seed_file(
        layout.loop, seeds, config.crawl.vnodes, UrlPolicy(config.scope),
        UrlNormalizer.from_section(config.urls)
    )
    for seed, reason in rejected:
        print(f"seed rejected ({reason}): {seed}", file=out)
    if not accepted and not resuming:
        raise CrawlError("no valid seed URL to start from")
    return accepted


def put_back_kept_files(layout: OutputLayout, restore_point: str | Path, out: TextIO) -> None:
    """Put back the crawl DB and loop files kept with the savepoint ``restore_point``
    (:mod:`crawl.savepoint_files`); a checkpoint, or a savepoint taken without the crawler,
    keeps none and restores from the files the crawl still has."""
    try:
        report = put_back(layout, restore_point)
    except (KeptFilesError, OSError) as error:
        raise CrawlError(f"cannot put back the files of {restore_point}: {error}") from None
    if report is not None:
        print(report.describe(), file=out)


#: Flink's setting that restores a savepoint leaving behind the state of operators the job
#: no longer has.
IGNORE_UNCLAIMED_STATE = "execution.state-recovery.ignore-unclaimed-state"


def migrate_earlier_version(layout: OutputLayout, restore_point: str | Path, out: TextIO
                            ) -> dict[str, str]:
    """The settings to restore ``restore_point`` with (a path or ``file:`` URI), which an
    earlier version may have taken:

    - when its job read the loop with Flink's file source, the files that source had read are
      recorded for the loop reader to take as read, and the source's state is left behind;
    - the state of stages this version no longer has (:data:`crawl.stages.RETIRED_UIDS`: the
      near-duplicate stage of one instance) is left behind, said on ``out``.

    Either is Flink's ``ignore-unclaimed-state``, set only when such state is there."""
    text = str(restore_point)
    path = Path(urllib.parse.urlsplit(text).path) if text.startswith("file:") else Path(text)
    settings = {}
    read = files_read_by_file_source(path)
    if read is not None:
        write_migrated(layout.loop, read)
        print(f"{path.name} was taken by a job reading the loop with Flink's file source: the "
              f"{len(read)} loop file(s) it had read are taken as read, its state is left behind",
              file=out)
        settings[IGNORE_UNCLAIMED_STATE] = "true"
    if any(holds_state_of(path, uid) for uid in RETIRED_UIDS):
        print(f"{path.name} was taken by a job with the near-duplicate stage of one instance: "
              "its index is left behind (pages archived before are not compared with later "
              "ones; a continuous crawl adds them again as it revisits them)", file=out)
        settings[IGNORE_UNCLAIMED_STATE] = "true"
    return settings


def path_for_embedded_python(path: str, executable: str = sys.executable) -> str:
    """``PATH`` with the directory of ``executable`` first.

    In thread mode the operators' Python runs inside the JVM, in a libpython that finds its
    prefix, and so its packages, by looking for ``python3`` on ``PATH``. Run as
    ``.venv/bin/python -m job`` without activating the environment, it would find another
    Python, without this crawler's packages (``No module named 'pemja'``); with the running
    interpreter's directory first it finds the environment the crawl was started from.
    """
    directory = os.path.dirname(executable)
    parts = [part for part in path.split(os.pathsep) if part and part != directory]
    return os.pathsep.join([directory, *parts])


def pyflink_home() -> Path:
    """The Flink distribution inside the installed pyflink package (its ``lib/``, ``conf/``
    and ``plugins/``)."""
    import pyflink

    return Path(pyflink.__file__).resolve().parent
