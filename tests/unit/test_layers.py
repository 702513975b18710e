"""The layers of the code: which package may import which, and none of the plain ones pyflink.

``crawl/`` holds the plain logic in subpackages over a shared vocabulary; ``drum/`` stands
alone, its modules in an order of their own (the store on top); ``operators/`` adapts both to
Flink and ``job/`` builds and runs the job. An import against the tables below (a new cycle,
say, or the configuration reaching into the code it configures) fails here, naming the
importing module.
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
              "crawl.fetch_requests", "crawl.stages", "crawl.state_cache"}

#: What each unit may import besides itself, the vocabulary and the standard library: whole
#: units, or single modules of one.
ALLOWED: dict[str, set[str]] = {
    "crawl.urls": set(),
    "crawl.http": set(),
    "crawl.frontier": {"crawl.http.dates"},
    "crawl.archive": {"crawl.urls"},
    "crawl.loop": {"crawl.urls"},
    "crawl.content": {"crawl.urls", "crawl.http", "crawl.loop"},
    "crawl.crawldb": {"crawl.urls", "crawl.loop", "crawl.http.dates", "drum"},
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
    "crawl.progress": {"crawl.memory", "crawl.stages", "crawl.status"},
    "crawl.savepoint_files": {"crawl.layout"},
    "crawl.fetch_requests": set(),
    "crawl.stages": set(),
    "crawl.state_cache": set(),
}
#: Inside ``crawl.http``: the client on top of its parts, each part on its own.
HTTP_ALLOWED: dict[str, set[str]] = {
    "crawl.http.io_loop": set(),
    "crawl.http.dates": set(),
    "crawl.http.address_guard": set(),
    "crawl.http.body": set(),
    "crawl.http.dns": {"crawl.http.address_guard"},
    "crawl.http.client": {"crawl.http.address_guard", "crawl.http.body", "crawl.http.dns"},
}
#: Inside the DRUM: what each of its modules may import of it, lowest first (the file formats
#: under the manifest, the parts of a merge under the merge, the store on top).
DRUM_ALLOWED: dict[str, set[str]] = {
    "drum.errors": set(),
    "drum.record": set(),
    "drum.config": set(),
    "drum.files": {"drum.errors", "drum.record"},
    "drum.manifest": {"drum.errors", "drum.files", "drum.record"},
    "drum.journal": {"drum.errors", "drum.files", "drum.record"},
    "drum.results": {"drum.record"},
    "drum.fold": {"drum.files", "drum.record"},
    "drum.due_window": {"drum.record"},
    "drum.selection": {"drum.config", "drum.record"},
    "drum.merge": {"drum.errors", "drum.record", "drum.config", "drum.files", "drum.manifest",
                   "drum.journal", "drum.results", "drum.fold", "drum.due_window",
                   "drum.selection"},
    "drum.store": {"drum.errors", "drum.record", "drum.config", "drum.files", "drum.manifest",
                   "drum.journal", "drum.results", "drum.fold", "drum.due_window",
                   "drum.selection", "drum.merge"},
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
            if target not in allowed and imported not in allowed:
                wrong.append(f"{module} imports {imported}")
    return wrong


def _drum_violations(root: Path = ROOT) -> list[str]:
    """Imports of one DRUM module by another against :data:`DRUM_ALLOWED` (the package's
    ``__init__`` gathers what it offers from any of them)."""
    wrong = []
    for module, path in _modules("drum", root):
        if module == "drum":
            continue
        allowed = DRUM_ALLOWED.get(module, set()) | {module}
        for imported in sorted(_imports(path)):
            if _unit(imported) == "drum" and imported not in allowed:
                wrong.append(f"{module} imports {imported}")
    return wrong


def test_every_crawl_module_has_a_layer() -> None:
    units = {_unit(module) for module, _ in _modules("crawl")} - {"crawl"}
    assert units <= set(ALLOWED) | VOCABULARY, units - set(ALLOWED) - VOCABULARY
    assert VOCABULARY <= units


def test_plain_packages_import_only_what_their_layer_allows() -> None:
    assert _violations("crawl") + _violations("drum") + _violations("synthweb") == []


def test_drum_modules_import_only_those_below_them() -> None:
    assert {module for module, _ in _modules("drum")} - {"drum"} == set(DRUM_ALLOWED)
    assert _drum_violations() == []


def test_the_drum_table_catches_wrong_imports(tmp_path: Path) -> None:
    (tmp_path / "drum").mkdir()
    (tmp_path / "drum" / "results.py").write_text(
        "from drum.record import RECORD\nfrom drum.store import Drum\n", encoding="utf-8")
    (tmp_path / "drum" / "config.py").write_text(
        "def policy():\n    from drum.selection import ReleaseLimits\n", encoding="utf-8")
    assert _drum_violations(tmp_path) == [
        "drum.config imports drum.selection",
        "drum.results imports drum.store",
    ]


def test_operators_and_job_sit_above_the_plain_packages() -> None:
    for module, path in _modules("operators"):
        assert not {_unit(i) for i in _imports(path)} & {"job", "synthweb"}, module
    for module, path in _modules("drum") + _modules("crawl"):
        assert not {_unit(i) for i in _imports(path)} & {"job", "operators"}, module


#: The job's modules that a crawl submitted with ``flink run`` uses: none may need the local
#: run's (:data:`LOCAL_RUN_MODULES`, the MiniCluster's set-up and watch).
CLUSTER_JOB_MODULES = ("job.preparation", "job.cluster", "job.flink_job", "job.submit")
#: The modules of a local run on the MiniCluster.
LOCAL_RUN_MODULES = ("job.launcher", "job.local_settings", "job.job_state", "job.watch")


def test_a_submitted_crawl_needs_nothing_of_the_local_run() -> None:
    modules = dict(_modules("job"))
    assert set(CLUSTER_JOB_MODULES) | set(LOCAL_RUN_MODULES) <= set(modules)
    for module in CLUSTER_JOB_MODULES:
        assert not _imports(modules[module]) & set(LOCAL_RUN_MODULES), module


def test_the_table_catches_wrong_imports(tmp_path: Path) -> None:
    (tmp_path / "crawl" / "urls").mkdir(parents=True)
    (tmp_path / "crawl" / "frontier").mkdir(parents=True)
    (tmp_path / "crawl" / "config.py").write_text(
        "def policy():\n    from crawl.urls.scope import UrlPolicy\n", encoding="utf-8")
    (tmp_path / "crawl" / "urls" / "scope.py").write_text(
        "from crawl.config import ScopeSection\nfrom crawl.processing import PageProcessor\n",
        encoding="utf-8")
    (tmp_path / "crawl" / "frontier" / "politeness.py").write_text(
        "from crawl.http.dates import parse_http_date\nfrom crawl.http.client import HttpFetcher\n",
        encoding="utf-8")
    assert _violations("crawl", tmp_path) == [
        "crawl.config imports crawl.urls.scope",
        "crawl.frontier.politeness imports crawl.http.client",
        "crawl.urls.scope imports crawl.processing",
    ]


def test_the_http_client_sits_on_its_parts() -> None:
    modules = {module: path for module, path in _modules("crawl/http") if module != "crawl.http"}
    assert set(modules) == set(HTTP_ALLOWED)
    wrong = [
        f"{module} imports {imported}"
        for module, path in modules.items()
        for imported in sorted(_imports(path))
        if imported.startswith("crawl.http") and imported not in HTTP_ALLOWED[module]
    ]
    assert wrong == []


def test_the_configuration_is_a_leaf() -> None:
    """Loading the configuration brings in nothing of the project (its package apart) and no
    numpy: the launcher, the command line and every stage read it before anything else."""
    assert _imports(ROOT / "crawl" / "config.py") == set()
    code = (
        "import sys\n"
        "import crawl.config\n"
        "crawl.config.load_config(sys.argv[1])\n"
        f"project = {PROJECT!r}\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in project + ('numpy',))\n"
        "print(','.join(loaded))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "conf" / "crawler.yaml")],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "crawl,crawl.config"


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


def test_no_test_module_imports_another() -> None:
    """What tests share lives in ``tests/fakes`` (or the integration tier's own helpers), not in
    another test module."""
    wrong = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            wrong += [f"{path.name} imports {name}" for name in names
                      if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")]
    assert wrong == []
