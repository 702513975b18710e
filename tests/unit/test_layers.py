"""The layers of the code: which package may import which, and none of the plain ones pyflink.

``crawl/`` holds the plain logic in subpackages over a shared vocabulary; ``drum/`` stands
alone; ``operators/`` adapts both to Flink and ``job/`` builds and runs the job. An import
against the table below (a new cycle, say, or the configuration reaching into the code it
configures) fails here, naming the importing module.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import crawl
import drum
import synthweb

ROOT = Path(__file__).resolve().parents[2]

#: The shared vocabulary: modules at the top of ``crawl/`` that every package may use.
VOCABULARY = {"crawl.config", "crawl.status", "crawl.hops", "crawl.model", "crawl.layout",
              "crawl.memory", "crawl.progress", "crawl.savepoint_files", "crawl.compat",
              "crawl.fetch_requests"}

#: What each unit may import besides itself, the vocabulary and the standard library.
ALLOWED: dict[str, set[str]] = {
    "crawl.urls": set(),
    "crawl.http": set(),
    "crawl.frontier": set(),
    "crawl.archive": {"crawl.urls"},
    "crawl.loop": {"crawl.urls"},
    "crawl.content": {"crawl.urls", "crawl.http", "crawl.loop"},
    "crawl.crawldb": {"crawl.urls", "crawl.loop", "drum"},
    "crawl.processing": {"crawl.urls", "crawl.http", "crawl.archive", "crawl.loop",
                         "crawl.content", "crawl.crawldb"},
    "crawl.report": {"crawl.archive", "crawl.frontier"},
    "drum": set(),
    "synthweb": set(),
}
#: Inside the vocabulary: what each of its modules may import (it is the bottom layer).
VOCABULARY_ALLOWED: dict[str, set[str]] = {
    "crawl.config": set(),
    "crawl.compat": set(),
    "crawl.status": {"crawl.compat"},
    "crawl.hops": set(),
    "crawl.layout": set(),
    "crawl.memory": set(),
    "crawl.model": {"crawl.status"},
    "crawl.progress": {"crawl.memory"},
    "crawl.savepoint_files": {"crawl.layout"},
    "crawl.fetch_requests": set(),
}
PROJECT = ("crawl", "drum", "synthweb", "operators", "job")


def _unit(module: str) -> str:
    """The layer unit of a module: a subpackage of crawl, a top-level crawl module, or a
    top-level package."""
    parts = module.split(".")
    if parts[0] != "crawl" or len(parts) == 1:
        return parts[0]
    return f"crawl.{parts[1]}"


def _modules(package: str, root: Path = ROOT) -> list[tuple[str, Path]]:
    found = []
    for path in sorted((root / package).rglob("*.py")):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        found.append((name.removesuffix(".__init__"), path))
    return found


def _imports(path: Path) -> set[str]:
    """Every project module ``path`` imports, at module level or inside a function."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name.split(".")[0] in PROJECT}


def _violations(package: str, root: Path = ROOT) -> list[str]:
    wrong = []
    for module, path in _modules(package, root):
        unit = _unit(module)
        for imported in sorted(_imports(path)):
            target = _unit(imported)
            if target == unit and unit not in VOCABULARY:
                continue
            if unit in VOCABULARY:
                allowed = VOCABULARY_ALLOWED[unit] | {unit}
            else:
                allowed = ALLOWED[unit] | VOCABULARY | {unit}
            if target not in allowed:
                wrong.append(f"{module} imports {imported}")
    return wrong


def test_every_crawl_module_has_a_layer() -> None:
    units = {_unit(module) for module, _ in _modules("crawl")} - {"crawl"}
    assert units <= set(ALLOWED) | VOCABULARY, units - set(ALLOWED) - VOCABULARY
    assert VOCABULARY <= units


def test_plain_packages_import_only_what_their_layer_allows() -> None:
    assert _violations("crawl") + _violations("drum") + _violations("synthweb") == []


def test_operators_and_job_sit_above_the_plain_packages() -> None:
    for module, path in _modules("operators"):
        assert not {_unit(i) for i in _imports(path)} & {"job", "synthweb"}, module
    for module, path in _modules("drum") + _modules("crawl"):
        assert not {_unit(i) for i in _imports(path)} & {"job", "operators"}, module


#: The job's modules that a crawl submitted with ``flink run`` uses: none may need the local
#: run's (``job.launcher``, the MiniCluster's set-up and watch).
CLUSTER_JOB_MODULES = ("job.preparation", "job.cluster", "job.flink_job", "job.submit")


def test_a_submitted_crawl_needs_nothing_of_the_local_run() -> None:
    modules = dict(_modules("job"))
    assert set(CLUSTER_JOB_MODULES) <= set(modules)
    for module in CLUSTER_JOB_MODULES:
        assert "job.launcher" not in _imports(modules[module]), module


def test_the_table_catches_wrong_imports(tmp_path: Path) -> None:
    (tmp_path / "crawl" / "urls").mkdir(parents=True)
    (tmp_path / "crawl" / "config.py").write_text(
        "def policy():\n    from crawl.urls.scope import UrlPolicy\n", encoding="utf-8")
    (tmp_path / "crawl" / "urls" / "scope.py").write_text(
        "from crawl.config import ScopeSection\nfrom crawl.processing import PageProcessor\n",
        encoding="utf-8")
    assert _violations("crawl", tmp_path) == [
        "crawl.config imports crawl.urls.scope",
        "crawl.urls.scope imports crawl.processing",
    ]


def test_plain_packages_do_not_import_pyflink() -> None:
    modules = [
        info.name
        for package in (crawl, drum, synthweb)
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
        if not info.name.endswith("__main__")
    ]
    assert "crawl.frontier.scheduler" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "leaked = sorted(m for m in sys.modules if m == 'pyflink' or m.startswith('pyflink.'))\n"
        "print(','.join(leaked))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == ""
