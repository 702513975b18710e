"""Watches a running crawl as Prometheus does: scrapes the endpoint of Flink's Prometheus
reporter while the crawl runs (a watcher for ``run_crawl(..., watch=)``), then holds what it
read against the Grafana dashboard's queries (``tests/grafana_dashboard.py``).

The crawl enables the reporter as README tells a user to: the project's ``flink-conf.yaml``
with its two commented reporter lines taken in (:func:`flink_conf_with_prometheus`), on a free
port instead of 9249.
"""

from __future__ import annotations

import re
import socket
import urllib.error
import urllib.request
from pathlib import Path

from tests.grafana_dashboard import (
    CRAWLER_PREFIX,
    dashboard_selectors,
    load_dashboard,
    selectors,
    variable_queries,
)
from tests.integration.crawl_runner import PROJECT_ROOT
from tests.integration.metrics_watch import tail_of

#: The reporter's lines in the project's flink-conf.yaml, commented out.
REPORTER_LINES = (
    "# metrics.reporter.prom.factory.class: "
    "org.apache.flink.metrics.prometheus.PrometheusReporterFactory\n",
    "# metrics.reporter.prom.port: 9249\n",
)

_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')

#: One scrape: every series (its labels, ``__name__`` included) with its value.
Scrape = list[tuple[dict[str, str], float]]


def free_port() -> int:
    """A TCP port free on every interface (where the reporter listens)."""
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def flink_conf_with_prometheus(directory: Path, port: int) -> Path:
    """A copy of the project's flink-conf.yaml in ``directory`` with the Prometheus reporter's
    lines in force, serving on ``port``."""
    text = (PROJECT_ROOT / "flink-conf.yaml").read_text(encoding="utf-8")
    factory, port_line = REPORTER_LINES
    assert factory in text, "flink-conf.yaml: the reporter's commented lines changed"
    assert port_line in text, "flink-conf.yaml: the reporter's commented lines changed"
    text = text.replace(factory, factory.removeprefix("# "))
    text = text.replace(port_line, f"metrics.reporter.prom.port: {port}\n")
    path = directory / "flink-conf-prometheus.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def parse_scrape(text: str) -> Scrape:
    """The series of a scrape in Prometheus' text format (comments skipped)."""
    series = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            raise ValueError(f"not a sample line: {line[:200]}")
        labels = {name: re.sub(r"\\(.)", r"\1", value)
                  for name, value in _LABEL.findall(match["labels"] or "")}
        labels["__name__"] = match["name"]
        series.append((labels, float(match["value"])))
    return series


class PrometheusWatch:
    """Scrapes ``http://127.0.0.1:<port>/metrics`` at each call and keeps, for every series
    seen, its values in the order read.

    A series is one metric of one subtask's attempt (its labels); the crawl's stages close one
    after another when it stops, so a late scrape can lack some: each series' last value read
    is its final one.
    """

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.reads = 0
        #: series (its labels, sorted) -> its values, one per scrape that had it
        self.values: dict[tuple[tuple[str, str], ...], list[float]] = {}

    def __call__(self) -> None:
        try:
            with urllib.request.urlopen(self.url, timeout=10) as response:
                text = response.read().decode("utf-8")
        except (OSError, urllib.error.URLError):
            return  # not serving yet, or stopped
        scrape = parse_scrape(text)
        if not any(labels["__name__"].startswith(CRAWLER_PREFIX) for labels, _ in scrape):
            return  # the job's operators not running yet
        self.reads += 1
        for labels, value in scrape:
            self.values.setdefault(tuple(sorted(labels.items())), []).append(value)

    def history(self, figure: str) -> list[list[float]]:
        """The values read of a crawler figure (``<stage>_<metric>``), one list per subtask."""
        name = CRAWLER_PREFIX + figure
        return [values for key, values in self.values.items()
                if ("__name__", name) in key]

    def final(self, figure: str) -> float:
        """A crawler figure's last value read, summed over subtasks."""
        return sum(values[-1] for values in self.history(figure))

    def check(self, summary: dict) -> None:
        """The figures moved while the crawl ran and end where the crawl's ``summary`` does,
        and every series selector of the dashboard selects a series that was scraped."""
        assert self.reads > 3, f"{self.reads} scrapes with the crawler's figures"
        fetched = self.history("fetch_results_FETCHED")
        assert fetched, "no fetch_results_FETCHED scraped"
        # Each subtask's count only grew, and was read while it grew (two reads at least saw
        # different values).
        assert all(values == sorted(values) for values in fetched), fetched
        assert any(len(set(values)) >= 2 for values in fetched), fetched
        pages = summary["pages_by_status"]["FETCHED"]
        assert self.final("fetch_results_FETCHED") >= pages
        assert pages - tail_of(pages) <= self.final("process_pages_FETCHED") <= pages
        assert self.final("process_bytes") > 0
        assert self.final("fetch_latency_ms_count") >= pages

        series = [dict(key) for key in self.values]
        dashboard = load_dashboard()
        # The dashboard's variables take their values from the scrape, as Grafana's would.
        values = {}
        for variable, selector_text, label in variable_queries(dashboard):
            (selector,) = selectors(selector_text)
            listed = {labels[label] for labels in series
                      if label in labels and selector.matches(labels)}
            assert len(listed) == 1, (variable, listed)
            values[variable] = listed.pop()
        assert values["job_name"] == "pyflink_crawler"
        missing = [
            f"{where}: {selector}" for where, selector in dashboard_selectors(dashboard)
            if not any(selector.with_variables(values).matches(labels) for labels in series)
        ]
        assert missing == [], "dashboard queries selecting nothing in the scrape"
