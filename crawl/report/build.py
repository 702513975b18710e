"""The crawl report: gather what a crawl's output directory holds and write ``report.html``.

:func:`gather_report` reads the crawl logs (streamed into columns and reduced to figures, see
:mod:`crawl.report.log_figures`), the summary, the stages' figures, the job record and the
hosts' Crawl-delay; :func:`write_report` renders them (:mod:`crawl.report.page`) into one
self-contained page. Both work on a crawl still running: they read what is there.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from crawl.config import Config, PolitenessSection, UserAgentSection
from crawl.layout import OutputLayout
from crawl.report.log_figures import LogFigures, SpacingRules, log_figures, read_crawl_logs
from crawl.report.sources import crawl_delays, read_figures, read_json

__all__ = ["REPORT_FILE_NAME", "ReportData", "ReportSettings", "gather_report", "write_report"]

REPORT_FILE_NAME = "report.html"

_POLITENESS = PolitenessSection()


@dataclasses.dataclass(frozen=True)
class ReportSettings:
    """The crawl's settings the report judges the log by (defaults: the configuration's)."""

    delay_seconds: float = _POLITENESS.delay_seconds
    response_time_factor: float = _POLITENESS.response_time_factor
    product_token: str = UserAgentSection().product
    max_crawl_delay_seconds: float = _POLITENESS.max_crawl_delay_seconds
    #: Where the settings came from, said in the report.
    origin: str = "the default configuration"

    @classmethod
    def from_config(cls, config: Config, origin: str) -> ReportSettings:
        return cls(delay_seconds=config.politeness.delay_seconds,
                   response_time_factor=config.politeness.response_time_factor,
                   product_token=config.user_agent.product,
                   max_crawl_delay_seconds=config.politeness.max_crawl_delay_seconds,
                   origin=origin)


@dataclasses.dataclass
class ReportData:
    """Everything the page shows."""

    root: str
    generated_ms: int
    settings: ReportSettings
    log: LogFigures
    #: summary.json (empty while the crawl runs).
    summary: dict[str, Any]
    #: The stages' counters and gauges (status/), summed over subtasks.
    counters: dict[str, int]
    gauges: dict[str, float]
    #: job.json: the job id, start, end and stop reason of the latest run.
    job: dict[str, Any]
    crawl_delays: dict[str, float]
    crawl_logs: list[str]

    @property
    def running(self) -> bool:
        """Whether the latest run had not finished when the report was written."""
        return bool(self.job) and "finished" not in self.job


def gather_report(root: str | os.PathLike[str], settings: ReportSettings | None = None,
                  *, now_ms: int | None = None) -> ReportData:
    """Read a crawl's output directory. Raises FileNotFoundError if it holds no crawl logs."""
    settings = settings or ReportSettings()
    layout = OutputLayout(Path(root))
    logs = sorted(layout.logs.glob("crawl-*.log"))
    if not logs:
        raise FileNotFoundError(f"no crawl logs in {layout.logs} (is {layout.root} the output "
                                "directory of a crawl?)")
    delays = crawl_delays(layout, settings.product_token, settings.max_crawl_delay_seconds)
    columns = read_crawl_logs(logs)
    log = log_figures(columns, SpacingRules(
        delay_seconds=settings.delay_seconds,
        response_time_factor=settings.response_time_factor, crawl_delays=delays))
    figures = read_figures(layout)
    return ReportData(
        root=str(layout.root),
        generated_ms=int(time.time() * 1000) if now_ms is None else now_ms,
        settings=settings,
        log=log,
        summary=read_json(layout.summary),
        counters=dict(figures.counters),
        gauges=dict(figures.gauges),
        job=read_json(layout.root / "job.json"),
        crawl_delays=delays,
        crawl_logs=[str(path) for path in logs],
    )


def write_report(root: str | os.PathLike[str], settings: ReportSettings | None = None) -> Path:
    """Write ``report.html`` into the crawl's output directory (atomically) and return its path."""
    from crawl.report.page import render_page

    data = gather_report(root, settings)
    path = Path(data.root) / REPORT_FILE_NAME
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(render_page(data), encoding="utf-8")
    os.replace(temporary, path)
    return path
