"""The Grafana dashboard (``conf/grafana/pyflink-crawler.json``): valid for Grafana's import,
every panel with a query on the Prometheus datasource the user picks, and every crawler metric
it queries the Prometheus name of a figure its stage counts.

The figures are read from the code: the names (or f-string patterns) the stages pass to
``count``, the keys of their gauges and the latency histogram of the fetch stage; a name given
as a :class:`crawl.stages.Figure` (``FETCH_QUEUED.name``, ``FETCH_RESULTS.member(...)``) is
looked up in that module. A figure renamed in the code, or a typo in a query, fails here; the
end-to-end test (``test_near_duplicates``) checks the same queries against a running crawl's
scrape.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from crawl import stages
from crawl.stages import (
    CRAWL_DB,
    FETCH,
    LOOP_READER,
    NEAR_DUPLICATES,
    NEARDUP_INDEX,
    PROCESS,
    Figure,
    Stage,
)
from operators.metrics import GROUP, fetch_latency_histogram, metric_name
from tests.grafana_dashboard import (
    CRAWLER_PREFIX,
    DASHBOARD,
    GRAFANA_VARIABLES,
    Selector,
    dashboard_selectors,
    load_dashboard,
    panel_queries,
    panels,
    selectors,
    variables_used,
)

ROOT = Path(__file__).resolve().parents[2]

#: Where each stage's figures are counted: its operator, and the plain code the operator hands
#: its StageStatus (or whose counts it copies into it).
STAGE_SOURCES = {
    LOOP_READER.figures: ["operators/loop_reader.py"],
    CRAWL_DB.figures: ["operators/crawl_db.py", "crawl/crawldb/partition.py"],
    FETCH.figures: ["operators/fetch.py", "crawl/frontier/scheduler.py"],
    PROCESS.figures: ["operators/process.py", "crawl/processing.py"],
    NEARDUP_INDEX.figures: ["operators/neardup_index.py"],
    NEAR_DUPLICATES.figures: ["operators/neardup.py"],
}
#: Figures every stage's StageStatus keeps itself.
EVERY_STAGE_SOURCE = "crawl/progress.py"
#: The series of a histogram in Prometheus' text format (Flink reports it as a summary: its
#: quantiles, and its count).
SUMMARY_SUFFIXES = ("", "_count")
#: Stands for the formatted part of a figure's name in a family's check.
PLACEHOLDER = "x"


def _stage_constant(node: ast.expr, kind: type) -> Any:
    """The :mod:`crawl.stages` constant of type ``kind`` that ``node`` names, else None."""
    if isinstance(node, ast.Name):
        value = getattr(stages, node.id, None)
        return value if isinstance(value, kind) else None
    return None


def _figure_patterns(node: ast.expr, stage: str) -> list[str]:
    """Regular expressions of the metric names a figure-name expression of the stage
    ``stage`` can give: a string, an f-string (its formatted parts any metric characters), a
    :class:`~crawl.stages.Figure`'s name or a member of its family (which must be ``stage``'s),
    or a choice between them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [re.escape(metric_name(node.value))]
    if isinstance(node, ast.Attribute) and node.attr == "name":
        figure = _stage_constant(node.value, Figure)
        if figure is not None:
            assert figure.stage.figures == stage, (ast.unparse(node), stage)
            return [re.escape(metric_name(figure.name))]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "member" and len(node.args) == 1):
        figure = _stage_constant(node.func.value, Figure)
        if figure is not None:
            assert figure.stage.figures == stage, (ast.unparse(node), stage)
            head = re.escape(metric_name(figure.member("")))
            return [head + part for part in _figure_patterns(node.args[0], stage)
                    or ["[A-Za-z0-9_]+"]]
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(re.escape(metric_name(str(value.value))))
            else:
                parts.append("[A-Za-z0-9_]+")
        return ["".join(parts)]
    if isinstance(node, ast.IfExp):
        return _figure_patterns(node.body, stage) + _figure_patterns(node.orelse, stage)
    return []  # a name only known at run time (the fetch stage's events: found where made)


def _receiver(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def figures_in(path: Path, stage: str) -> set[str]:
    """Regular expressions of the metric names of the figures the code in ``path`` counts for
    the stage ``stage`` (``<status>.count(name)``, ``answer.count(name)``, the fetch stage's
    ``events.append(name)``), sets as gauges (``gauges[name]``, ``gauge_functions[name]``) or
    registers as the fetch latency histogram."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "count" and node.args):
            receiver = _receiver(node.func.value)
            if receiver.endswith("status") or receiver == "answer":
                found.update(_figure_patterns(node.args[0], stage))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "append" and _receiver(node.func.value) == "events"):
            found.update(_figure_patterns(node.args[0], stage))
        elif isinstance(node, ast.Subscript) and _receiver(node.value) in {
            "gauges", "gauge_functions"
        } and isinstance(node.ctx, ast.Store):
            found.update(_figure_patterns(node.slice, stage))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == fetch_latency_histogram.__name__):
            name = inspect.signature(fetch_latency_histogram).parameters["name"].default
            found.update(re.escape(name + suffix) for suffix in SUMMARY_SUFFIXES)
    return found


def mirrored_stages() -> dict[str, str]:
    """Operator module -> the stage of its ``mirror_status(..., stage)`` call."""
    mirrored = {}
    for path in sorted((ROOT / "operators").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "mirror_status"):
                argument = node.args[2]
                assert isinstance(argument, ast.Attribute), f"{path}: not a stage's figures name"
                assert argument.attr == "figures", f"{path}: not a stage's figures name"
                stage = _stage_constant(argument.value, Stage)
                assert stage is not None, f"{path}: {ast.unparse(argument)} is no stage"
                mirrored[str(path.relative_to(ROOT))] = stage.figures
    return mirrored


@pytest.fixture(scope="module")
def stage_figures() -> dict[str, set[str]]:
    """Stage -> regular expressions of its figures' metric names."""
    return {stage: figures_in(ROOT / EVERY_STAGE_SOURCE, stage).union(
                *(figures_in(ROOT / source, stage) for source in sources))
            for stage, sources in STAGE_SOURCES.items()}


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return load_dashboard()


def test_the_stage_table_names_every_operator_that_reports_figures() -> None:
    mirrored = mirrored_stages()
    assert set(mirrored.values()) == set(STAGE_SOURCES)
    for module, stage in mirrored.items():
        assert module in STAGE_SOURCES[stage], (module, stage)


def test_the_figures_found_in_the_code_include_the_documented_ones(
    stage_figures: dict[str, set[str]],
) -> None:
    """The code scan finds what README's metrics section names (and so cannot pass on an
    empty scan)."""
    def counted(stage: str, metric: str) -> bool:
        return any(re.fullmatch(pattern, metric) for pattern in stage_figures[stage])

    for stage, metric in [
        ("fetch", "results_FETCHED"), ("fetch", "errors_http_404"), ("fetch", "queued"),
        ("fetch", "in_flight"), ("fetch", "latency_ms"), ("process", "bytes"),
        ("process", "links_rejected_url_scheme_data"), ("process", "warc_revisits"),
        ("crawldb", "urls_found"), ("crawldb", "deferred_budget_domain"),
        ("crawldb", "merges_major"), ("crawldb", "known"), ("crawldb", "pending"),
        ("neardup", "pages_near_duplicate"), ("decode", "busy_pct"),
    ]:
        assert counted(stage, metric), (stage, metric)
    assert not counted("fetch", "results")
    assert not counted("neardup", "bytes")


def test_the_dashboard_is_a_grafana_dashboard_with_a_prometheus_datasource_variable(
    dashboard: dict,
) -> None:
    text = DASHBOARD.read_text(encoding="utf-8")
    assert json.loads(text) == dashboard
    assert dashboard["uid"] == dashboard["title"] == "pyflink-crawler"
    assert isinstance(dashboard["schemaVersion"], int)
    # For import: no id of the instance it came from, no datasource of another instance.
    assert dashboard["id"] is None
    assert "__inputs" not in dashboard
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    datasource = variables["datasource"]
    assert datasource["type"] == "datasource"
    assert datasource["query"] == "prometheus"
    reference = {"type": "prometheus", "uid": "${datasource}"}
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"] == reference, variable["name"]
    ids, seen = set(), 0
    for panel in panels(dashboard):
        seen += 1
        title = panel["title"]
        assert panel["id"] not in ids, title
        ids.add(panel["id"])
        assert panel["datasource"] == reference, title
        targets = panel["targets"]
        assert targets, f"panel {title!r} has no query"
        assert len({target["refId"] for target in targets}) == len(targets), title
        for target in targets:
            assert target["datasource"] == reference, title
            assert target["expr"].strip(), title
    assert seen >= 20


def test_panels_fit_the_grid_without_overlapping(dashboard: dict) -> None:
    cells: dict[tuple[int, int], str] = {}
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert 0 <= grid["x"] < grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, (panel["title"], cells.get((x, y)))
                cells[(x, y)] = panel["title"]


def test_queries_use_only_defined_variables(dashboard: dict) -> None:
    defined = {v["name"] for v in dashboard["templating"]["list"]} | GRAFANA_VARIABLES
    used = set()
    for title, expression in panel_queries(dashboard):
        used |= variables_used(expression)
        assert variables_used(expression) <= defined, title
        # Every crawler and job series is read for the job picked on the dashboard.
        for selector in selectors(expression):
            name = selector.name or selector.family or ""
            if name.startswith((CRAWLER_PREFIX, "flink_jobmanager_job_",
                                "flink_taskmanager_job_")):
                assert any(m.label == "job_name" and m.value == "$job_name"
                           for m in selector.matchers), (title, name)
    assert used == defined - {"datasource"}  # that one is the panels' data source


def _family_members(selector: Selector) -> list[str]:
    """Names standing for a family ``head(alternatives)tail``: one per alternative, or one
    with :data:`PLACEHOLDER` for ``(.+)``."""
    family = selector.family
    assert family is not None
    match = re.fullmatch(r"(?P<head>[A-Za-z0-9_]*)\((?P<group>[^()]+)\)(?P<tail>[A-Za-z0-9_]*)",
                         family)
    assert match, f"a family must be head(a|b|...)tail or head(.+)tail: {family}"
    group = match["group"]
    alternatives = [PLACEHOLDER] if group == ".+" else group.split("|")
    assert all(re.fullmatch(r"[A-Za-z0-9_]+", a) for a in alternatives), family
    return [match["head"] + alternative + match["tail"] for alternative in alternatives]


def test_every_crawler_metric_queried_is_a_figure_its_stage_counts(
    dashboard: dict, stage_figures: dict[str, set[str]],
) -> None:
    """Exact names must be figures of their stage (``metric_name`` of what it counts); a
    family ``(.+)`` must be a figure name the stage formats at run time (an f-string such as
    ``errors.{reason}``), a family of alternatives must list figures."""
    assert CRAWLER_PREFIX.endswith(f"_{GROUP}_")
    crawler = 0
    for where, selector in dashboard_selectors(dashboard):
        if selector.name is not None:
            names = [selector.name]
        elif selector.family is not None:
            names = _family_members(selector)
        else:
            pytest.fail(f"{where}: a selector without a metric name")
        for name in names:
            assert name.startswith(("flink_jobmanager_", "flink_taskmanager_")), (where, name)
            if not name.startswith(CRAWLER_PREFIX):
                continue
            crawler += 1
            stage, _, metric = name.removeprefix(CRAWLER_PREFIX).partition("_")
            assert stage in stage_figures, (where, name)
            assert any(re.fullmatch(pattern, metric) for pattern in stage_figures[stage]), (
                f"{where}: {name} is no figure the {stage} stage counts"
            )
    assert crawler >= 30


def test_the_selector_reader_knows_the_query_forms_of_the_dashboard() -> None:
    expression = (
        'sum by (reason) (rate(label_replace({__name__=~"a_(.+)", job_name=~"$job"}, "reason", '
        '"$1", "__name__", "a_(.+)")[$__rate_interval:$__interval])) + max(b{quantile="0.5"}) '
        '/ ignoring (x) c offset 5m'
    )
    found = selectors(expression)
    assert [s.family or s.name for s in found] == ["a_(.+)", "b", "c"]
    assert found[1].matches({"__name__": "b", "quantile": "0.5"})
    assert not found[1].matches({"__name__": "b", "quantile": "0.95"})
    assert found[0].with_variables({"job": "crawl_1"}).matches(
        {"__name__": "a_timeout", "job_name": "crawl_1"}
    )
    assert not found[0].with_variables({"job": "crawl_1"}).matches(
        {"__name__": "a_timeout", "job_name": "crawl_2"}
    )
    with pytest.raises(ValueError, match="cannot read PromQL"):
        selectors("sum(a) @ 5")


def test_the_example_prometheus_configuration_scrapes_the_documented_port() -> None:
    """conf/prometheus.yml scrapes a local crawl where flink-conf.yaml's reporter line (once
    uncommented) serves it: the port, and the next two, where a local cluster's TaskManagers
    serve theirs at parallelism 2."""
    port = re.search(r"^# metrics\.reporter\.prom\.port: (\d+)$",
                     (ROOT / "flink-conf.yaml").read_text(encoding="utf-8"), re.MULTILINE)
    assert port is not None
    configuration = yaml.safe_load((ROOT / "conf" / "prometheus.yml").read_text(encoding="utf-8"))
    targets = [target for job in configuration["scrape_configs"]
               for static in job["static_configs"] for target in static["targets"]]
    first = int(port.group(1))
    assert targets == [f"localhost:{first + n}" for n in range(3)]
