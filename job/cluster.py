"""The crawl as a job submitted to a Flink cluster with ``flink run``.

The same crawl as the local launcher's (:mod:`job.launcher`): the same configuration file and
``--set`` overrides, the same output directory layout, seeds dropped into the loop directory
the same way (:mod:`job.preparation`), the same topology (:func:`job.topology.build_topology`).
What differs is who runs and stops it: ``flink run`` submits it to the cluster's JobManager,
and ``flink stop`` ends it with a savepoint; nothing watches its figures to stop it when it is
idle.

Two halves live here, both without a JVM of their own:

- the job side (:func:`prepare_job`, :func:`job_settings`), which the script
  ``job/flink_job.py`` runs inside ``flink run`` to build and submit the job, and
- the submitting side (:func:`flink_run_command`), the ``flink run`` line that
  ``python -m job.submit`` runs for you.

Which Flink settings a job can set for itself: what Flink reads when it builds and schedules
one job (``execution.*`` for checkpointing and savepoints, ``state.*`` for the state backend,
``restart-strategy.*``, ``pipeline.*``, ``parallelism.*``, ``python.*`` for the Python
operators' execution mode and interpreter, ``table.*`` for the planner). Everything else in
``flink-conf.yaml`` (JVM options, ports, memory, task slots) configures processes that already
run when the job arrives: it belongs in the cluster's ``config.yaml``
(:data:`JOB_SETTING_PREFIXES`).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from crawl.config import Config
from crawl.layout import OutputLayout
from job.preparation import (
    DEFAULT_FLINK_CONF,
    flink_configuration,
    migrate_earlier_version,
    prepare_output,
    pyflink_home,
)

__all__ = [
    "JOB_PACKAGES",
    "JOB_SETTING_PREFIXES",
    "ClusterJob",
    "flink_run_command",
    "job_settings",
    "pack_code",
    "prepare_job",
]

#: Keys a job's own configuration can set on a cluster (see the module docstring).
JOB_SETTING_PREFIXES = (
    "execution.",
    "state.",
    "restart-strategy.",
    "pipeline.",
    "parallelism.",
    "python.",
    "table.",
)
#: The key ``flink run -s`` sets: the job restores from that savepoint or checkpoint.
RESTORE_KEY = "execution.state-recovery.path"
#: The packages the Python operators import, shipped to the TaskManagers with ``--pyFiles``.
JOB_PACKAGES = ("crawl", "drum", "job", "operators")
#: The script ``flink run -py`` runs.
JOB_SCRIPT = Path(__file__).resolve().parent / "flink_job.py"


@dataclasses.dataclass(frozen=True)
class ClusterJob:
    """What :func:`prepare_job` decided: the job's settings, its layout and its seeds."""

    config: Config
    layout: OutputLayout
    settings: dict[str, str]
    seeds_accepted: int
    restore_from: str | None


def job_settings(
    local_settings: Mapping[str, str], context: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """Split the local run's Flink settings into the job's own and those left to the cluster.

    ``context`` is the configuration ``flink run`` hands the program (the cluster's
    ``config.yaml`` and the command line's options). The interpreter of the Python operators
    is taken from it when given (``-pyexec``); otherwise the job names the interpreter that
    builds it, which is right when the crawler is installed at the same path on every
    machine. Returns (the job's settings, the keys left to the cluster's configuration).
    """
    own: dict[str, str] = {}
    cluster: list[str] = []
    for key, value in local_settings.items():
        if key.startswith(JOB_SETTING_PREFIXES):
            own[key] = value
        else:
            cluster.append(key)
    for key in ("python.executable", "python.client.executable"):
        if context.get(key):
            own.pop(key, None)
    return own, sorted(cluster)


def prepare_job(
    config: Config,
    seeds: Iterable[str],
    context: Mapping[str, str],
    *,
    overwrite: bool = False,
    flink_conf: Path = DEFAULT_FLINK_CONF,
    out: TextIO = sys.stdout,
) -> ClusterJob:
    """Prepare the output directory for a submitted crawl and compute the job's settings.

    A new crawl needs an output directory that holds none (or ``overwrite``) and at least one
    valid seed. A job restored with ``flink run -s`` (``context`` names the savepoint)
    continues the crawl in the output directory: its fixed settings must match, the files kept
    with the savepoint are put back, seeds are optional and added to it. The output directory
    must be one every TaskManager and the client see at the same path (a shared filesystem
    mounted alike everywhere).
    """
    layout = OutputLayout(Path(config.crawl.output_dir))
    config = dataclasses.replace(
        config, crawl=dataclasses.replace(config.crawl, output_dir=str(layout.root))
    )
    restore_from = context.get(RESTORE_KEY) or None
    accepted = prepare_output(
        layout, config, seeds, resuming=restore_from is not None, overwrite=overwrite, out=out,
        how_to_resume="resume it with flink run -s SAVEPOINT", restore_from=restore_from,
    )
    local = flink_configuration(config, layout, flink_conf)
    settings, cluster_keys = job_settings(local, context)
    if restore_from is not None:
        settings.update(migrate_earlier_version(layout, restore_from, out))
    if cluster_keys:
        print(
            f"left to the cluster's configuration: {', '.join(cluster_keys)}",
            file=out,
        )
    return ClusterJob(config, layout, settings, accepted, restore_from)


def pack_code(project_root: Path, archive: Path) -> Path:
    """Write the crawler's packages of ``project_root`` (Python files only) into a zip, with
    the project's ``flink-conf.yaml`` (the default Flink settings the job starts from).

    ``flink run -pyfs`` extracts a zip on each TaskManager and puts the extracted directory
    first on the Python operators' path; a plain directory would itself be put on the path,
    so its packages would not import by name.
    """
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as packed:
        for package in JOB_PACKAGES:
            for path in sorted((project_root / package).rglob("*.py")):
                packed.write(path, path.relative_to(project_root).as_posix())
        packed.write(project_root / DEFAULT_FLINK_CONF.name, DEFAULT_FLINK_CONF.name)
    return archive


def flink_run_command(
    program_args: Sequence[str],
    *,
    flink_home: Path,
    python: str = sys.executable,
    code_archive: Path | None = None,
    jobmanager: str | None = None,
    savepoint: str | None = None,
    detached: bool = True,
) -> list[str]:
    """The ``flink run`` command that submits the crawl with ``program_args``.

    ``python`` runs the job's script on the client (``-pyclientexec``) and the Python
    operators on the TaskManagers (``-pyexec``): it must exist at that path on every machine,
    with the crawler's dependencies. ``code_archive`` (:func:`pack_code`) ships the crawler's
    packages along (``-pyfs``), so that the TaskManagers run the code that built the job
    rather than the version installed there.
    """
    command = [str(flink_home / "bin" / "flink"), "run"]
    if detached:
        command.append("--detached")
    if jobmanager:
        command += ["--jobmanager", jobmanager]
    if savepoint:
        command += ["--fromSavepoint", savepoint]
    command += ["-pyclientexec", python, "-pyexec", python]
    if code_archive is not None:
        command += ["-pyfs", str(code_archive)]
    command += ["-py", str(JOB_SCRIPT), *program_args]
    return command


def flink_home() -> Path:
    """``FLINK_HOME`` if set, else the Flink distribution inside the installed pyflink."""
    if os.environ.get("FLINK_HOME"):
        return Path(os.environ["FLINK_HOME"])
    return pyflink_home()
